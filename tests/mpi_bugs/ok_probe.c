/* Correct: receiving a message whose size the receiver does not know, with
 * MPI_Probe, MPI_Get_count, a buffer of that size, then MPI_Recv, as in
 * particle migration, adaptive-mesh refinement and serialized-object
 * exchange. Each step every rank MPI_Isends a message of 1 to 50 ints
 * (the length changes with rank and step) to its right neighbour, probes and
 * receives the one from its left, then completes its send with MPI_Wait.
 * The length and contents are checked. Must stay silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int length(int r, int s) { return 1 + (r * 7 + s * 3) % 50; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int out[50];
  long total = 0;
  for (int s = 0; s < steps; ++s) {
    const int n = length(rank, s);
    for (int i = 0; i < n; ++i) out[i] = rank * 1000 + s + i;
    MPI_Request rq;
    MPI_Isend(out, n, MPI_INT, right, 3, MPI_COMM_WORLD, &rq);
    MPI_Status st;
    int count = -1;
    MPI_Probe(left, 3, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    int* in = malloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
    MPI_Recv(in, count, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (count != length(left, s)) {
      fprintf(stderr, "rank %d step %d: got %d ints, want %d\n", rank, s, count, length(left, s));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < count; ++i)
      if (in[i] != left * 1000 + s + i) {
        fprintf(stderr, "rank %d step %d: wrong int %d\n", rank, s, i);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    total += count;
    free(in);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
  }
  if (rank == 0) printf("done: %d steps on %d ranks (%ld ints received)\n", steps, size, total);
  MPI_Finalize();
  return 0;
}
