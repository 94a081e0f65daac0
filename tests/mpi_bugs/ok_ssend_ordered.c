/* Correct: odd-even transposition sort with synchronous sends, as in the
 * textbook parallel sort and in codes that exchange with one neighbour at a
 * time: in phase p every rank pairs with rank+1 or rank-1 (pairs (0,1),(2,3)
 * in even phases, (1,2),(3,4) in odd ones; a rank without a partner sits the
 * phase out, e.g. the last rank of an odd count). Each pair has one even and
 * one odd rank, and the order is set by parity: the even rank MPI_Ssends then
 * receives, the odd rank receives then MPI_Ssends, so the synchronous sends
 * cannot deadlock. The lower rank keeps the minimum. After size phases the
 * values are sorted; that is checked with an MPI_Allgather. Must stay silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int value(int r, int s) { return (r * 37 + s * 11) % 101; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  int* all = calloc((size_t)size, sizeof(int));
  int* count = malloc(sizeof(int) * 101);
  for (int s = 0; s < steps; ++s) {
    int mine = value(rank, s), other = 0;
    for (int p = 0; p < size; ++p) {
      const int partner = p % 2 == rank % 2 ? rank + 1 : rank - 1;
      if (partner < 0 || partner >= size) continue;
      if (rank % 2 == 0) {
        MPI_Ssend(&mine, 1, MPI_INT, partner, p, MPI_COMM_WORLD);
        MPI_Recv(&other, 1, MPI_INT, partner, p, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(&other, 1, MPI_INT, partner, p, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Ssend(&mine, 1, MPI_INT, partner, p, MPI_COMM_WORLD);
      }
      if (rank < partner ? other < mine : other > mine) mine = other;
    }
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    /* sorted, and the same multiset of values as before the sort */
    for (int v = 0; v < 101; ++v) count[v] = 0;
    for (int q = 0; q < size; ++q) ++count[value(q, s)], --count[all[q]];
    int bad = 0;
    for (int q = 0; q < size; ++q) bad |= (q > 0 && all[q - 1] > all[q]) || count[all[q]] != 0;
    if (bad) {
      fprintf(stderr, "rank %d step %d: not sorted\n", rank, s);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (rank == 0) printf("done: %d steps on %d ranks (largest %d)\n", steps, size, all[size - 1]);
  free(count);
  free(all);
  MPI_Finalize();
  return 0;
}
