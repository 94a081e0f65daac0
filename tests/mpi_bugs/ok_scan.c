/* Correct: prefix reductions, MPI_Scan (inclusive) and MPI_Exscan
 * (exclusive; its result at rank 0 is undefined and not read), as used to
 * compute each rank's offset into a global array or file (parallel I/O,
 * particle numbering, stream compaction), plus an MPI_Scan with MPI_MAX on
 * two ints. Every result is checked. Must stay silent.
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
  long offset = 0;
  for (int s = 0; s < steps; ++s) {
    /* rank q owns (q + s) % 5 + 1 items */
    long n = (rank + s) % 5 + 1, incl = -1, excl = -1, want = 0;
    for (int q = 0; q < rank; ++q) want += (q + s) % 5 + 1;
    MPI_Scan(&n, &incl, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (incl != want + n) fail(rank, s, "inclusive scan");
    MPI_Exscan(&n, &excl, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) excl = 0; /* undefined at rank 0 */
    if (excl != want) fail(rank, s, "exclusive scan");
    int v[2] = {(rank * 5 + s) % 7, -rank}, mx[2] = {-1, -1};
    MPI_Scan(v, mx, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int m = 0;
    for (int q = 0; q <= rank; ++q)
      if ((q * 5 + s) % 7 > m) m = (q * 5 + s) % 7;
    if (mx[0] != m || mx[1] != 0) fail(rank, s, "max scan");
    offset += excl;
  }
  long all = 0;
  MPI_Reduce(&offset, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%ld)\n", steps, size, all);
  MPI_Finalize();
  return 0;
}
