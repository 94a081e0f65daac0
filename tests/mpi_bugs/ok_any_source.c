/* Correct: master/worker task farming, as in parameter sweeps, Monte Carlo
 * drivers and dynamic load balancers: rank 0 hands out one work item per
 * worker, then receives results with MPI_ANY_SOURCE/MPI_ANY_TAG and gives
 * the sender the next item, or a stop tag when none is left; each worker
 * loops receiving from rank 0 with MPI_ANY_TAG until it gets the stop tag.
 * argv[1] is the number of work items. Every result is checked, and so is the
 * total. Needs 2 ranks or more. Must stay silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { WORK = 1, RESULT = 2, STOP = 3 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  long msg[2]; /* item, item * item */
  if (rank == 0) {
    long next = 0, sum = 0, want = 0;
    int outstanding = 0;
    for (int w = 1; w < size; ++w) {
      msg[0] = next;
      if (next < steps) ++next, ++outstanding;
      MPI_Send(msg, 2, MPI_LONG, w, msg[0] < steps ? WORK : STOP, MPI_COMM_WORLD);
    }
    while (outstanding > 0) {
      MPI_Status st;
      MPI_Recv(msg, 2, MPI_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      --outstanding;
      if (st.MPI_TAG != RESULT || msg[1] != msg[0] * msg[0]) {
        fprintf(stderr, "rank 0: bad result from rank %d (tag %d)\n", st.MPI_SOURCE, st.MPI_TAG);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      sum += msg[1];
      msg[0] = next;
      if (next < steps) ++next, ++outstanding;
      MPI_Send(msg, 2, MPI_LONG, st.MPI_SOURCE, msg[0] < steps ? WORK : STOP, MPI_COMM_WORLD);
    }
    for (long i = 0; i < steps; ++i) want += i * i;
    if (sum != want) {
      fprintf(stderr, "rank 0: sum %ld, want %ld\n", sum, want);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    printf("done: %d items on %d ranks (%ld)\n", steps, size, sum);
  } else {
    for (;;) {
      MPI_Status st;
      MPI_Recv(msg, 2, MPI_LONG, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      if (st.MPI_TAG == STOP) break;
      msg[1] = msg[0] * msg[0];
      MPI_Send(msg, 2, MPI_LONG, 0, RESULT, MPI_COMM_WORLD);
    }
  }
  MPI_Finalize();
  return 0;
}
