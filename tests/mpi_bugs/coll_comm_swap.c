/* Bug: two duplicated communicators (a solver's and a logger's) used in
 * a different order: the last rank synchronises the logger's first.
 *
 * expect: divergence; two ranks: inconclusive, both groups stated; more:
 * the last rank named; "the ranks call barrier on different communicators".
 * scout-expect: divergence
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 20;
  double x = rank, sum = 0;
  for (int s = 0; s < steps; ++s) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm solver, logger;
  MPI_Comm_dup(MPI_COMM_WORLD, &solver);
  MPI_Comm_dup(MPI_COMM_WORLD, &logger);
  if (rank != size - 1) {
    MPI_Barrier(solver); /* expect: SOLVER */
    MPI_Barrier(logger);
  } else {
    MPI_Barrier(logger); /* expect: LOGGER */
    MPI_Barrier(solver);
  }
  MPI_Comm_free(&solver);
  MPI_Comm_free(&logger);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
