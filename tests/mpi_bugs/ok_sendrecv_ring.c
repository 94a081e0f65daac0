/* Correct: a ring shift with MPI_Sendrecv, as in systolic (Cannon-style)
 * matrix multiplication, hand-written ring allgathers and pipelined N-body
 * codes: each rank passes a token to its right neighbour and takes one from
 * its left in a single call, so no send/receive ordering is needed, at any
 * rank count (odd ones, and 2 where left == right). Each step the token goes
 * size-1 times round to the right, then once back to the left with
 * MPI_Sendrecv_replace. Every received token is checked. Must stay silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void check(int ok, const char* what, int rank, int step) {
  if (!ok) {
    fprintf(stderr, "rank %d step %d: wrong %s\n", rank, step, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  long shifts = 0;
  for (int s = 0; s < steps; ++s) {
    long tok = (long)rank * 1000 + s, in = -1;
    /* after k shifts to the right a rank holds the token of rank - k */
    for (int k = 1; k < size; ++k) {
      MPI_Sendrecv(&tok, 1, MPI_LONG, right, 1, &in, 1, MPI_LONG, left, 1, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      tok = in;
      check(tok == (long)((rank - k + size) % size) * 1000 + s, "token going right", rank, s);
      ++shifts;
    }
    /* the right neighbour holds the token of right - (size - 1) = rank + 2 */
    MPI_Sendrecv_replace(&tok, 1, MPI_LONG, left, 2, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check(tok == (long)((rank + 2) % size) * 1000 + s, "token going left", rank, s);
  }
  if (rank == 0) printf("done: %d steps on %d ranks (%ld shifts)\n", steps, size, shifts);
  MPI_Finalize();
  return 0;
}
