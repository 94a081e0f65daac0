/* Correct: a non-blocking MPI_Iallreduce overlapped with local computation
 * that touches neither of its buffers, then MPI_Wait, as in pipelined
 * conjugate gradient solvers and gradient all-reduce overlapped with the
 * backward pass in data-parallel training. The local work differs between
 * ranks (so ranks reach MPI_Wait at different times) and is a few
 * hundred microseconds at most. Every result is checked. Must stay silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  const double tri = (double)size * (size - 1) / 2;
  double v[4], r[4], work = 0;
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < 4; ++i) v[i] = rank + s + i, r[i] = -1;
    MPI_Request rq;
    MPI_Iallreduce(v, r, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq);
    double acc = 0; /* local work while the reduction is in flight */
    for (int k = 0; k < 20000 * (rank % 4 + 1); ++k) acc += (k % 7) * 0.5;
    work += acc;
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int i = 0; i < 4; ++i)
      if (r[i] != tri + (double)size * (s + i)) {
        fprintf(stderr, "rank %d step %d: wrong sum %g\n", rank, s, r[i]);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
  }
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, work);
  MPI_Finalize();
  return 0;
}
