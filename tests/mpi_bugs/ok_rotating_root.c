/* Correct: MPI_Bcast and MPI_Reduce whose root changes every step (root =
 * step % size, every rank computes the same root), as in pivot-row
 * broadcasts of LU/Gaussian elimination, round-robin owners in
 * block-cyclic codes and per-step output aggregators. Every result is
 * checked at the ranks that receive one. Must stay silent.
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
  long check = 0;
  for (int s = 0; s < steps; ++s) {
    const int root = s % size;
    int row[8];
    for (int i = 0; i < 8; ++i) row[i] = rank == root ? s * 8 + i : -1;
    MPI_Bcast(row, 8, MPI_INT, root, MPI_COMM_WORLD);
    for (int i = 0; i < 8; ++i)
      if (row[i] != s * 8 + i) {
        fprintf(stderr, "rank %d step %d: wrong broadcast from root %d\n", rank, s, root);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    /* the next reduction goes to a different root than the broadcast */
    const int rroot = (root + size / 2) % size;
    long v[2] = {rank, (long)rank * s}, r[2] = {-1, -1};
    MPI_Reduce(v, r, 2, MPI_LONG, MPI_SUM, rroot, MPI_COMM_WORLD);
    if (rank == rroot) {
      const long tri = (long)size * (size - 1) / 2;
      if (r[0] != tri || r[1] != tri * s) {
        fprintf(stderr, "rank %d step %d: wrong reduction %ld %ld\n", rank, s, r[0], r[1]);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      check += r[1];
    }
  }
  long all = 0;
  MPI_Reduce(&check, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%ld)\n", steps, size, all);
  MPI_Finalize();
  return 0;
}
