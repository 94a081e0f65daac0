/* Correct: collectives whose arguments differ between ranks and still
 * match, as MPI allows: MPI_Gatherv and MPI_Allgatherv with a different send
 * count at every rank, MPI_Scatterv with a different receive count,
 * MPI_Gather and MPI_Reduce with MPI_IN_PLACE at the root (its send count and
 * type ignored), and MPI_Bcast of four ints sent by the root as one
 * contiguous derived datatype and received by the others as four MPI_INT
 * (the same type signature). Must stay silent.
 *
 * expect: no verdict.
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 300;
  int* counts = malloc(sizeof(int) * (size_t)size);
  int* displs = malloc(sizeof(int) * (size_t)size);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = r + 1;
    displs[r] = total;
    total += r + 1;
  }
  int* all = malloc(sizeof(int) * (size_t)total);
  int mine[64];
  for (int i = 0; i < rank + 1; ++i) mine[i] = rank;
  MPI_Datatype four;
  MPI_Type_contiguous(4, MPI_INT, &four);
  MPI_Type_commit(&four);
  long check = 0;
  for (int s = 0; s < steps; ++s) {
    if (argc > 2 && s == 50 && rank == size - 1) sleep(atoi(argv[2]));
    MPI_Gatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    MPI_Scatterv(all, counts, displs, MPI_INT, mine, rank + 1, MPI_INT, size - 1, MPI_COMM_WORLD);
    int one = rank;
    if (rank == 0)
      MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    else
      MPI_Gather(&one, 1, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD);
    long v = rank, sum = rank;
    if (rank == 0)
      MPI_Reduce(MPI_IN_PLACE, &sum, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    else
      MPI_Reduce(&v, NULL, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    int quad[4] = {s, s, s, s};
    if (rank == 0)
      MPI_Bcast(quad, 1, four, 0, MPI_COMM_WORLD);
    else
      MPI_Bcast(quad, 4, MPI_INT, 0, MPI_COMM_WORLD);
    check += all[0] + quad[3] + sum;
  }
  if (rank == 0) printf("done: %d steps on %d ranks (%ld)\n", steps, size, check);
  MPI_Type_free(&four);
  free(all);
  free(displs);
  free(counts);
  MPI_Finalize();
  return 0;
}
