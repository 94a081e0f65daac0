/* Bug: a debugging barrier left in a branch that only rank 0 takes (it
 * meant to time its own I/O). Rank 0 waits in MPI_Barrier while the others
 * have gone on to the next step's MPI_Allreduce.
 *
 * expect: divergence; two ranks: inconclusive, both groups stated; more:
 * rank 0 named; "the ranks call collectives in a different order".
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
  if (rank == 0) MPI_Barrier(MPI_COMM_WORLD); /* expect: BARRIER */
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* expect: ALLREDUCE */
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
