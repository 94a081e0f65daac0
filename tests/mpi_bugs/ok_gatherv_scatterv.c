/* Correct: MPI_Gatherv to rank 0 and MPI_Scatterv from the last rank with a
 * count per rank that differs between ranks and changes every step (0 to 3
 * ints: zero counts included, as MPI allows), and displacements at the root
 * laid out in reverse rank order with a one-int gap between blocks, as in
 * I/O aggregation of unevenly decomposed data and load rebalancing. Every
 * element is checked. Must stay silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void fail(int rank, int step, const char* what) {
  fprintf(stderr, "rank %d step %d: wrong %s\n", rank, step, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  const size_t n = (size_t)size;
  int* counts = malloc(sizeof(int) * n);
  int* displs = malloc(sizeof(int) * n);
  int* buf = malloc(sizeof(int) * 4 * n); /* at most 3 ints and a gap a rank */
  int mine[3], got[3];
  long check = 0;
  for (int s = 0; s < steps; ++s) {
    int off = 0;
    for (int r = size - 1; r >= 0; --r) {
      counts[r] = (r + s) % 4;
      displs[r] = off;
      off += counts[r] + 1;
    }
    const int c = counts[rank];
    for (int k = 0; k < c; ++k) mine[k] = rank * 1000 + s % 100 * 10 + k;
    MPI_Gatherv(mine, c, MPI_INT, buf, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
      for (int r = 0; r < size; ++r)
        for (int k = 0; k < counts[r]; ++k)
          if (buf[displs[r] + k] != r * 1000 + s % 100 * 10 + k) fail(rank, s, "gathered int");
    if (rank == size - 1)
      for (int r = 0; r < size; ++r)
        for (int k = 0; k < counts[r]; ++k) buf[displs[r] + k] = -(r * 1000 + s % 100 * 10 + k);
    MPI_Scatterv(buf, counts, displs, MPI_INT, got, c, MPI_INT, size - 1, MPI_COMM_WORLD);
    for (int k = 0; k < c; ++k)
      if (got[k] != -(rank * 1000 + s % 100 * 10 + k)) fail(rank, s, "scattered int");
    check += off;
  }
  if (rank == 0) printf("done: %d steps on %d ranks (%ld)\n", steps, size, check);
  free(buf);
  free(displs);
  free(counts);
  MPI_Finalize();
  return 0;
}
