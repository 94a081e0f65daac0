/* Bug: both ranks start a synchronous send (MPI_Issend) and wait for it
 * before posting their receive: each send completes only when the other
 * side's receive is posted.
 *
 * expect: both ranks in MPI_Wait at WAIT0 and WAIT1, each waiting for its
 * send (record version 9): deadlock of ranks 0 and 1 at every size, both
 * sides sending.
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
  MPI_Request rq;
  if (rank < 2) {
    const int peer = 1 - rank;
    MPI_Issend(&x, 1, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, &rq);
    if (rank == 0) MPI_Wait(&rq, MPI_STATUS_IGNORE); /* expect: WAIT0 */
    else MPI_Wait(&rq, MPI_STATUS_IGNORE);           /* expect: WAIT1 */
    MPI_Recv(&y, 1, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
