/* Bug: an exchange through MPI_Sendrecv where rank 0 receives with tag
 * 2 but rank 1 sends with tag 1 (rank 1's own receive, tag 1, matches rank
 * 0's send and completes). Rank 0 waits in MPI_Sendrecv, rank 1 goes on to
 * the barrier.
 *
 * expect: a hang or deadlock naming rank 0 in MPI_Sendrecv at SENDRECV
 * for rank 1 (tag 2), rank 1 in MPI_Barrier at BARRIER.
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
  if (rank < 2) {
    const int peer = 1 - rank, stag = 1, rtag = rank == 0 ? 2 : 1;
    MPI_Sendrecv(&x, 1, MPI_DOUBLE, peer, stag, &y, 1, MPI_DOUBLE, peer, rtag, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* expect: SENDRECV */
  }
  MPI_Barrier(MPI_COMM_WORLD); /* expect: BARRIER */
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
