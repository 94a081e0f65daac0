/* Bug: rank 0 skips its send (a condition on its local data is false)
 * and goes on to the barrier; rank 1 waits in MPI_Recv for it.
 *
 * expect: a hang or deadlock naming rank 1 in MPI_Recv at RECV for rank 0
 * and rank 0 in MPI_Barrier at BARRIER.
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
  double x = rank, sum = 0;
  for (int s = 0; s < steps; ++s) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  double y = 0;
  const int have = rank == 0 ? 0 : 1;
  if (rank == 0 && have) MPI_Send(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
  if (rank == 1) MPI_Recv(&y, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* expect: RECV */
  MPI_Barrier(MPI_COMM_WORLD); /* expect: BARRIER */
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
