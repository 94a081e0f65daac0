/* Both sides sending synchronously: ranks 0 and 1 each call MPI_Ssend to
 * the other before receiving; a synchronous send completes only once its
 * receive is posted.
 *
 * expect: deadlock attributed to ranks 0 and 1; the summary names rank 0 in
 *         MPI_Ssend at line SEND0 for rank 1 and rank 1 in MPI_Ssend at line
 *         SEND1 for rank 0: "(both sides sending: synchronous, or too large
 *         to buffer)".
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
    MPI_Ssend(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD); /* expect: SEND0 */
    MPI_Recv(&y, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    MPI_Ssend(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD); /* expect: SEND1 */
    MPI_Recv(&y, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  printf("rank %d: done\n", rank);
  MPI_Finalize();
  return 0;
}
