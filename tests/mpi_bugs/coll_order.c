/* Collectives called in a different order: each rank's last rank (the
 * odd one) calls MPI_Barrier where the others call MPI_Allreduce, then
 * MPI_Allreduce where they call MPI_Barrier. Nobody can complete.
 *
 * expect: 2 ranks: divergence inconclusive (no strict majority), the
 *         summary names rank 0 in MPI_Allreduce at line ALLREDUCE and
 *         rank 1 in MPI_Barrier at line BARRIER: "the ranks call
 *         collectives in a different order".
 * expect: 3 or more ranks: divergence attributed to the last rank, same
 *         summary words.
 * Before the bug each rank runs `steps` healthy steps (argv[1], default 50).
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
  const int steps = argc > 1 ? atoi(argv[1]) : 50;
  double x = rank, sum = 0;
  for (int s = 0; s < steps; ++s) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank != size - 1) {
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* expect: ALLREDUCE */
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    MPI_Barrier(MPI_COMM_WORLD); /* expect: BARRIER */
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  printf("rank %d: done (%g)\n", rank, sum);
  MPI_Finalize();
  return 0;
}
