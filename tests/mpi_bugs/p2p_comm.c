/* Bug: rank 0 sends to rank 1 on a duplicate of MPI_COMM_WORLD, rank 1
 * receives from rank 0 on MPI_COMM_WORLD. The message is large
 * (rendezvous): the send waits for a receive that matches it, the receive
 * for a send that matches it. Other ranks (if any) wait in the barrier.
 *
 * expect: deadlock of ranks 0 and 1; "no receive matches the send (sent on
 * another communicator than the receive waits on)".
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
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  const int steps = argc > 1 ? atoi(argv[1]) : 20;
  const int n = 1 << 17;
  double* buf = calloc((size_t)n, sizeof(double));
  double x = rank, sum = 0;
  for (int s = 0; s < steps; ++s) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    MPI_Send(buf, n, MPI_DOUBLE, 1, 7, dup); /* expect: SEND */
  else if (rank == 1)
    MPI_Recv(buf, n, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* expect: RECV */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  free(buf);
  MPI_Comm_free(&dup);
  MPI_Finalize();
  return 0;
}
