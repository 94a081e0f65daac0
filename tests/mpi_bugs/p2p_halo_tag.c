/* Bug: a 1-D halo exchange (MPI_Isend/MPI_Irecv to both neighbours,
 * MPI_Waitall) where the last rank tags its left-going message as if it
 * went right, so its left neighbour's receive from it never matches.
 *
 * expect: the last rank's left neighbour in MPI_Waitall at WAITALL,
 * waiting for the receive from the last rank (tag 2), and the last rank
 * in MPI_Waitall at WAITALL, waiting for its send (tag 1): a deadlock of
 * the two at every size (the other requests matched; the other ranks wait
 * in MPI_Barrier behind them).
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
  const int n = 1 << 15; /* 256 KiB: not buffered */
  double* out = calloc((size_t)n, sizeof(double));
  double* in = calloc((size_t)2 * n, sizeof(double));
  MPI_Request rq[4];
  int k = 0;
  const int left = rank - 1, right = rank + 1;
  if (left >= 0) {
    MPI_Irecv(in, n, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[k++]);
    MPI_Isend(out, n, MPI_DOUBLE, left, rank == size - 1 ? 1 : 2, MPI_COMM_WORLD, &rq[k++]);
  }
  if (right < size) {
    MPI_Irecv(in + n, n, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &rq[k++]);
    MPI_Isend(out, n, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &rq[k++]);
  }
  MPI_Waitall(k, rq, MPI_STATUSES_IGNORE); /* expect: WAITALL */
  MPI_Barrier(MPI_COMM_WORLD);
  free(out);
  free(in);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
