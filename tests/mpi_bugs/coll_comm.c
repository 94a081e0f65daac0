/* A collective on the wrong communicator: the last rank calls MPI_Barrier
 * on a duplicate of MPI_COMM_WORLD where the others call it on
 * MPI_COMM_WORLD itself. Nobody can complete.
 *
 * expect: 2 ranks: divergence inconclusive, the summary names rank 0 in
 *         MPI_Barrier at line WORLD and rank 1 in MPI_Barrier at line DUP:
 *         "the ranks call barrier on different communicators".
 * expect: 3 or more ranks: divergence attributed to the last rank.
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
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  const int steps = argc > 1 ? atoi(argv[1]) : 50;
  double x = rank, sum = 0;
  for (int s = 0; s < steps; ++s) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank != size - 1)
    MPI_Barrier(MPI_COMM_WORLD); /* expect: WORLD */
  else
    MPI_Barrier(dup); /* expect: DUP */
  printf("rank %d: done (%g)\n", rank, sum);
  MPI_Comm_free(&dup);
  MPI_Finalize();
  return 0;
}
