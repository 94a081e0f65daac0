/* Bug: an off-by-one in the last rank's loop bound: it runs one
 * iteration fewer of the solver loop (one MPI_Allreduce each) and then
 * broadcasts the result, while the others still reduce.
 *
 * expect: divergence; two ranks: inconclusive, both groups stated; more:
 * the last rank named; "the ranks call collectives in a different order".
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
  const int iters = rank == size - 1 ? 4 : 5;
  for (int i = 0; i < iters; ++i) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* expect: ALLREDUCE */
  MPI_Bcast(&sum, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* expect: BCAST */
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
