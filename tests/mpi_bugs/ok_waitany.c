/* Correct: several MPI_Irecv completed one at a time with MPI_Waitany, in
 * whatever order they arrive, as codes that process each neighbour's data as
 * soon as it lands (unstructured-mesh assembly, task-based runtimes) do.
 * Each step every rank posts one MPI_Irecv from every other rank, sends to
 * every other rank with MPI_Isend (the number of ints differs by pair),
 * handles the receives with MPI_Waitany until it returns MPI_UNDEFINED, then
 * completes the sends with MPI_Waitall. Every message is checked. Must stay
 * silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define M 4 /* at most M ints a message */

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  const size_t n = (size_t)size;
  MPI_Request* rrq = malloc(sizeof(MPI_Request) * n);
  MPI_Request* srq = malloc(sizeof(MPI_Request) * n);
  int* in = malloc(sizeof(int) * M * n);
  int* out = malloc(sizeof(int) * M * n);
  long handled = 0;
  for (int s = 0; s < steps; ++s) {
    for (int q = 0; q < size; ++q) { /* a self-message is skipped: a null request */
      rrq[q] = srq[q] = MPI_REQUEST_NULL;
      if (q == rank) continue;
      MPI_Irecv(&in[q * M], M, MPI_INT, q, 9, MPI_COMM_WORLD, &rrq[q]);
    }
    for (int q = 0; q < size; ++q) {
      if (q == rank) continue;
      const int c = (rank + q + s) % M + 1; /* at most M, the receive's size */
      for (int k = 0; k < c; ++k) out[q * M + k] = rank * 1000 + q * 10 + k;
      MPI_Isend(&out[q * M], c, MPI_INT, q, 9, MPI_COMM_WORLD, &srq[q]);
    }
    for (;;) {
      int idx = MPI_UNDEFINED, count = -1;
      MPI_Status st;
      MPI_Waitany(size, rrq, &idx, &st);
      if (idx == MPI_UNDEFINED) break; /* all receives done */
      MPI_Get_count(&st, MPI_INT, &count);
      int bad = st.MPI_SOURCE != idx || count != (idx + rank + s) % M + 1;
      for (int k = 0; !bad && k < count; ++k) bad = in[idx * M + k] != idx * 1000 + rank * 10 + k;
      if (bad) {
        fprintf(stderr, "rank %d step %d: wrong message from rank %d\n", rank, s, idx);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      ++handled;
    }
    MPI_Waitall(size, srq, MPI_STATUSES_IGNORE);
  }
  if (handled != (long)steps * (size - 1)) {
    fprintf(stderr, "rank %d: handled %ld messages\n", rank, handled);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) printf("done: %d steps on %d ranks (%ld messages at rank 0)\n", steps, size, handled);
  free(out);
  free(in);
  free(srq);
  free(rrq);
  MPI_Finalize();
  return 0;
}
