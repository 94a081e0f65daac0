/* Correct: MPI_Waitall's results, checked by the program itself (the probe
 * waits for a few requests with MPI_Waitsome and must return what
 * MPI_Waitall returns): each step posts, around a ring, a receive from any
 * source (tag 5) and one from the right neighbour (tag 6), a null request,
 * an inactive persistent receive and two sends, one rank late now and then
 * so the requests complete at different times; then checks every status in
 * request order (source, tag, count), the null and the inactive request's
 * empty status, and which handles are null afterwards. Also waits with
 * MPI_STATUSES_IGNORE. Exits 1 on the first difference. Must stay silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 64

static int bad(int rank, int step, const char* what, int got, int want) {
  fprintf(stderr, "ok_waitall_status: rank %d step %d: %s %d, expected %d\n", rank, step, what, got, want);
  return 1;
}

static int empty(const MPI_Status* s) {
  int count = -1;
  MPI_Get_count(s, MPI_DOUBLE, &count);
  return s->MPI_SOURCE == MPI_ANY_SOURCE && s->MPI_TAG == MPI_ANY_TAG && count == 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 60;
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double to_r[N], to_l[N], from_any[N], from_r[N], idle[N];
  MPI_Request unused;
  MPI_Recv_init(idle, N, MPI_DOUBLE, left, 9, MPI_COMM_WORLD, &unused);
  int fails = 0;
  for (int s = 0; s < steps && !fails; ++s) {
    for (int i = 0; i < N; ++i) to_r[i] = to_l[i] = rank * 1000 + s;
    if (s % 7 == 3 && rank == s % size) {  /* late: the others' requests complete apart */
      struct timespec d = {0, 20 * 1000 * 1000};
      nanosleep(&d, NULL);
    }
    MPI_Request rq[6];
    MPI_Status st[6];
    MPI_Irecv(from_any, N, MPI_DOUBLE, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &rq[0]);
    rq[1] = MPI_REQUEST_NULL;
    MPI_Irecv(from_r, N, MPI_DOUBLE, right, 6, MPI_COMM_WORLD, &rq[2]);
    rq[3] = unused;
    MPI_Isend(to_r, N, MPI_DOUBLE, right, 5, MPI_COMM_WORLD, &rq[4]);
    MPI_Isend(to_l, N, MPI_DOUBLE, left, 6, MPI_COMM_WORLD, &rq[5]);
    if (s % 2) {
      if (MPI_Waitall(6, rq, MPI_STATUSES_IGNORE) != MPI_SUCCESS) fails += bad(rank, s, "return code", 1, 0);
    } else {
      for (int i = 0; i < 6; ++i) st[i].MPI_SOURCE = st[i].MPI_TAG = -77;
      if (MPI_Waitall(6, rq, st) != MPI_SUCCESS) fails += bad(rank, s, "return code", 1, 0);
      int count = -1;
      MPI_Get_count(&st[0], MPI_DOUBLE, &count);
      if (!fails && st[0].MPI_SOURCE != left) fails += bad(rank, s, "any-source receive: source", st[0].MPI_SOURCE, left);
      if (!fails && st[0].MPI_TAG != 5) fails += bad(rank, s, "any-source receive: tag", st[0].MPI_TAG, 5);
      if (!fails && count != N) fails += bad(rank, s, "any-source receive: count", count, N);
      if (!fails && !empty(&st[1])) fails += bad(rank, s, "null request: empty status", 0, 1);
      if (!fails && (st[2].MPI_SOURCE != right || st[2].MPI_TAG != 6))
        fails += bad(rank, s, "receive from the right: source", st[2].MPI_SOURCE, right);
      if (!fails && !empty(&st[3])) fails += bad(rank, s, "inactive persistent request: empty status", 0, 1);
    }
    if (!fails && (from_any[0] != left * 1000 + s || from_r[N - 1] != right * 1000 + s))
      fails += bad(rank, s, "received value", (int)from_any[0], left * 1000 + s);
    for (int i = 0; i < 6 && !fails; ++i)
      if ((rq[i] == MPI_REQUEST_NULL) != (i != 3)) fails += bad(rank, s, "request null afterwards", i, -1);
  }
  MPI_Request_free(&unused);
  int all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && all == 0) printf("ok_waitall_status: all statuses as MPI_Waitall's (%d steps on %d ranks)\n", steps, size);
  MPI_Finalize();
  return all ? 1 : 0;
}
