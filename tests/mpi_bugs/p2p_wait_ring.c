/* Bug: a ring where every rank posts its receive from the previous
 * rank and waits for it (MPI_Irecv, MPI_Wait) before sending to the next.
 *
 * expect: every rank in MPI_Wait at WAIT, each waiting for a receive
 * (record version 9): deadlock of every rank, both sides receiving.
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
  MPI_Irecv(&y, 1, MPI_DOUBLE, (rank + size - 1) % size, 0, MPI_COMM_WORLD, &rq);
  MPI_Wait(&rq, MPI_STATUS_IGNORE); /* expect: WAIT */
  MPI_Send(&x, 1, MPI_DOUBLE, (rank + 1) % size, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
