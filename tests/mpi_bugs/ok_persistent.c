/* Correct: persistent requests, as in iterative solvers and time-stepping
 * codes that repeat the same neighbour exchange every step: MPI_Send_init and
 * MPI_Recv_init to and from both ring neighbours once (one tag per direction,
 * so that with 2 ranks, where left == right, the two messages stay apart),
 * then each step refill the send buffers, MPI_Startall and MPI_Waitall, and
 * MPI_Request_free at the end. Every received value is checked. Must stay
 * silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 8

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double to_r[N], to_l[N], from_l[N], from_r[N];
  MPI_Request rq[4];
  MPI_Recv_init(from_l, N, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &rq[0]);
  MPI_Recv_init(from_r, N, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &rq[1]);
  MPI_Send_init(to_r, N, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &rq[2]);
  MPI_Send_init(to_l, N, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[3]);
  double sum = 0;
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < N; ++i) { /* only while the requests are inactive */
      to_r[i] = rank * 1000.0 + s + i * 0.125;
      to_l[i] = -(rank * 1000.0 + s + i * 0.125);
    }
    MPI_Startall(4, rq);
    MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
    for (int i = 0; i < N; ++i)
      if (from_l[i] != left * 1000.0 + s + i * 0.125 || from_r[i] != -(right * 1000.0 + s + i * 0.125)) {
        fprintf(stderr, "rank %d step %d: wrong value %d\n", rank, s, i);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    sum += from_l[0] + from_r[0];
  }
  for (int i = 0; i < 4; ++i) MPI_Request_free(&rq[i]);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
