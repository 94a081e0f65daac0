/* Bug: every rank first receives from its left neighbour, then sends to its
 * right one: a cycle of receives through all ranks.
 *
 * expect: deadlock of every rank; "both sides receiving".
 * scout-expect: deadlock
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
  double x = rank, sum = 0, in = 0;
  for (int s = 0; s < steps; ++s) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  MPI_Recv(&in, 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* expect: RECV */
  MPI_Send(&x, 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum + in);
  MPI_Finalize();
  return 0;
}
