/* Correct: MPI_Reduce_scatter_block (each rank gets its own 3-element block
 * of the element-wise sum), then MPI_Reduce_scatter with a different count
 * per rank (r % 3 + 1), as in distributed sparse matrix-vector products,
 * parallel FFT transposes and gradient sharding (ZeRO-style) in training
 * codes. Every received element is checked. Must stay silent.
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
  const long tri = (long)size * (size - 1) / 2;
  long* send = malloc(sizeof(long) * 3 * (size_t)size);
  int* counts = malloc(sizeof(int) * (size_t)size);
  int first = 0; /* index of this rank's first element in the varying split */
  for (int r = 0; r < size; ++r) {
    counts[r] = r % 3 + 1;
    if (r < rank) first += counts[r];
  }
  long recv[3], check = 0;
  for (int s = 0; s < steps; ++s) {
    /* element i of every rank's vector: rank + i + s; its sum: tri + size*(i + s) */
    for (int i = 0; i < 3 * size; ++i) send[i] = rank + i + s;
    MPI_Reduce_scatter_block(send, recv, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int j = 0; j < 3; ++j)
      if (recv[j] != tri + (long)size * (3 * rank + j + s)) {
        fprintf(stderr, "rank %d step %d: wrong block element %d\n", rank, s, j);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    MPI_Reduce_scatter(send, recv, counts, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int j = 0; j < counts[rank]; ++j)
      if (recv[j] != tri + (long)size * (first + j + s)) {
        fprintf(stderr, "rank %d step %d: wrong element %d\n", rank, s, j);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    check += recv[0];
  }
  if (rank == 0) printf("done: %d steps on %d ranks (%ld)\n", steps, size, check);
  free(counts);
  free(send);
  MPI_Finalize();
  return 0;
}
