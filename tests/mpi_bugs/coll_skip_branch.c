/* Bug: a collective inside a branch that the last rank does not take
 * (it has no rows left to reduce, so it skips the reduction and goes on
 * to the barrier after it). The others wait in MPI_Allreduce, the last
 * rank in MPI_Barrier.
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
  const int rows = rank == size - 1 ? 0 : 10;
  if (rows > 0) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* expect: ALLREDUCE */
  MPI_Barrier(MPI_COMM_WORLD); /* expect: BARRIER */
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
