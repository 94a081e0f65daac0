/* Correct: 1 MiB messages (far above the eager limit: rendezvous) shifted
 * round a ring by every rank at once, made safe by posting the receive
 * first: MPI_Irecv from one neighbour, then a blocking MPI_Send to the other,
 * then MPI_Wait, as halo and pipeline codes with large blocks do. The
 * direction alternates every step. Each rank's MPI_Send can only wait for a
 * receive that is already posted, so nothing can deadlock at any rank count
 * (2, where left == right, included). Every element is checked. Must stay
 * silent.
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
  const int n = 1 << 17; /* doubles: 1 MiB */
  double* out = malloc(sizeof(double) * (size_t)n);
  double* in = malloc(sizeof(double) * (size_t)n);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double check = 0;
  for (int s = 0; s < steps; ++s) {
    const int to = s % 2 ? left : right, from = s % 2 ? right : left;
    for (int i = 0; i < n; ++i) out[i] = rank * 1e7 + s * 1e3 + i % 1000;
    MPI_Request rq;
    MPI_Irecv(in, n, MPI_DOUBLE, from, s % 2, MPI_COMM_WORLD, &rq);
    MPI_Send(out, n, MPI_DOUBLE, to, s % 2, MPI_COMM_WORLD);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; ++i)
      if (in[i] != from * 1e7 + s * 1e3 + i % 1000) {
        fprintf(stderr, "rank %d step %d: wrong element %d\n", rank, s, i);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    check += in[n - 1];
  }
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, check);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
