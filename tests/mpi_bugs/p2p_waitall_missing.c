/* Bug: rank 0 posts receives from every other rank and waits for all of
 * them (MPI_Waitall), but the last rank's send is skipped (it has no
 * data); the other ranks wait in the barrier.
 *
 * expect: rank 0 in MPI_Waitall at WAITALL, waiting for the last rank's
 * message only (the others' arrived: the probe publishes what is still
 * pending), and the last rank in MPI_Barrier at BARRIER, waiting for rank
 * 0: a deadlock of the two (at 2 ranks [0,1]; the other ranks wait in the
 * barrier behind them, not in the cycle).
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
  double* y = calloc((size_t)size, sizeof(double));
  MPI_Request* rq = calloc((size_t)size, sizeof(MPI_Request));
  if (rank == 0) {
    for (int r = 1; r < size; ++r) MPI_Irecv(&y[r], 1, MPI_DOUBLE, r, 0, MPI_COMM_WORLD, &rq[r - 1]);
    MPI_Waitall(size - 1, rq, MPI_STATUSES_IGNORE); /* expect: WAITALL */
  } else if (rank != size - 1 || size == 1) {
    MPI_Send(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD); /* expect: BARRIER */
  free(y);
  free(rq);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
