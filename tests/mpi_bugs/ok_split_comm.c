/* Correct: MPI_Comm_split into even and odd ranks, with collectives on the
 * two sub-communicators interleaved with collectives on MPI_COMM_WORLD, as
 * codes with separate groups (ocean/atmosphere, I/O aggregators, row and
 * column communicators) do. The even group and the odd group run their own
 * collectives with their own roots at the same time; with 2 ranks each group
 * has a single rank. Every result is checked. Must stay silent.
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
  const int color = rank % 2;
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
  int hrank = 0, hsize = 0;
  MPI_Comm_rank(half, &hrank);
  MPI_Comm_size(half, &hsize);
  check(hrank == rank / 2 && hsize == (size + 1 - color) / 2, "split", rank, -1);
  long total = 0;
  for (int s = 0; s < steps; ++s) {
    long v = rank + s, hsum = 0, want = 0, b = 0, wsum = 0;
    MPI_Allreduce(&v, &hsum, 1, MPI_LONG, MPI_SUM, half);
    for (int q = color; q < size; q += 2) want += q + s;
    check(hsum == want, "group sum", rank, s);
    b = rank == s % size ? 7L * s : -1;
    MPI_Bcast(&b, 1, MPI_LONG, s % size, MPI_COMM_WORLD);
    check(b == 7L * s, "world bcast", rank, s);
    const int hroot = (s + color) % hsize; /* each group its own root */
    b = hrank == hroot ? 1000L * color + s : -1;
    MPI_Bcast(&b, 1, MPI_LONG, hroot, half);
    check(b == 1000L * color + s, "group bcast", rank, s);
    MPI_Allreduce(&hsum, &wsum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    /* every rank contributes its group's sum: even sum * evens + odd sum * odds */
    long ev = 0, od = 0;
    for (int q = 0; q < size; ++q) *(q % 2 ? &od : &ev) += q + s;
    check(wsum == ev * ((size + 1) / 2) + od * (size / 2), "world sum", rank, s);
    if (s % 10 == 9) MPI_Barrier(half);
    total += wsum;
  }
  MPI_Comm_free(&half);
  if (rank == 0) printf("done: %d steps on %d ranks (%ld)\n", steps, size, total);
  MPI_Finalize();
  return 0;
}
