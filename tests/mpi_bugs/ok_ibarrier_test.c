/* Correct: MPI_Ibarrier polled with MPI_Test in a loop, in the NBX dynamic
 * sparse data exchange (Hoefler et al., used by PETSc's PetscCommBuildTwoSided
 * and by graph and adaptive-mesh codes) where receivers do not know who sends
 * to them: each rank MPI_Issends to two targets that change every step, then
 * loops on MPI_Iprobe(MPI_ANY_SOURCE) + MPI_Recv; once its own sends have
 * completed (MPI_Testall) it enters MPI_Ibarrier, and it stops when the
 * barrier completes (MPI_Test). The tag alternates between steps so that a
 * fast rank's next-step message is never taken for this step's. Each rank
 * checks every message and the number it got. Must stay silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int target(int q, int s, int i, int size) { /* never q itself */
  return (q + 1 + (i == 0 ? s : s * 3 + q) % (size - 1)) % size;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  long polls = 0;
  for (int s = 0; s < steps; ++s) {
    const int tag = s % 2;
    int val[2], x = 0, got = 0, want = 0, sent = 0, done = 0, in_barrier = 0;
    MPI_Request sreq[2], breq = MPI_REQUEST_NULL;
    for (int i = 0; i < 2; ++i) {
      val[i] = (s % 1000) * 100000 + rank * 10 + i;
      MPI_Issend(&val[i], 1, MPI_INT, target(rank, s, i, size), tag, MPI_COMM_WORLD, &sreq[i]);
    }
    for (int q = 0; q < size; ++q)
      for (int i = 0; i < 2; ++i) want += q != rank && target(q, s, i, size) == rank;
    while (!done) {
      int flag = 0;
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &st);
      if (flag) {
        MPI_Recv(&x, 1, MPI_INT, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (x / 100000 != s % 1000 || x % 100000 / 10 != st.MPI_SOURCE) {
          fprintf(stderr, "rank %d step %d: wrong message %d from %d\n", rank, s, x, st.MPI_SOURCE);
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
        ++got;
      }
      if (in_barrier) {
        MPI_Test(&breq, &done, MPI_STATUS_IGNORE);
      } else {
        MPI_Testall(2, sreq, &sent, MPI_STATUSES_IGNORE);
        if (sent) {
          MPI_Ibarrier(MPI_COMM_WORLD, &breq);
          in_barrier = 1;
        }
      }
      ++polls;
    }
    if (got != want) {
      fprintf(stderr, "rank %d step %d: got %d messages, want %d\n", rank, s, got, want);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (rank == 0) printf("done: %d steps on %d ranks (%ld polls at rank 0)\n", steps, size, polls);
  MPI_Finalize();
  return 0;
}
