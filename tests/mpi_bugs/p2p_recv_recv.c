/* Both sides receiving: ranks 0 and 1 each wait in MPI_Recv for the other
 * before sending. Any other ranks take part in the healthy steps only.
 *
 * expect: deadlock attributed to ranks 0 and 1; the summary names rank 0 in
 *         MPI_Recv at line RECV0 for rank 1 and rank 1 in MPI_Recv at line
 *         RECV1 for rank 0: "(both sides receiving)".
 * scout-expect: deadlock
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int steps = argc > 1 ? atoi(argv[1]) : 50;
  double x = rank, y = 0;
  for (int s = 0; s < steps; ++s) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_Recv(&y, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* expect: RECV0 */
    MPI_Send(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
  } else if (rank == 1) {
    MPI_Recv(&y, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* expect: RECV1 */
    MPI_Send(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  printf("rank %d: done\n", rank);
  MPI_Finalize();
  return 0;
}
