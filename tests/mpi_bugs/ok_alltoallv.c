/* Correct: MPI_Alltoallv with a different count for every pair of ranks
 * (1 to 3 ints, changing each step; the count from q to r equals the count
 * from r to q, so each side knows what it gets), with send displacements laid
 * out in reverse rank order, as in particle redistribution, sample sort and
 * sparse transposes. Every received element is checked. Must stay silent.
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
  const size_t n = (size_t)size;
  int* scount = malloc(sizeof(int) * n);
  int* sdispl = malloc(sizeof(int) * n);
  int* rcount = malloc(sizeof(int) * n);
  int* rdispl = malloc(sizeof(int) * n);
  int* sbuf = malloc(sizeof(int) * 3 * n);
  int* rbuf = malloc(sizeof(int) * 3 * n);
  long check = 0;
  for (int s = 0; s < steps; ++s) {
    int off = 0;
    for (int q = size - 1; q >= 0; --q) { /* blocks stored last rank first */
      scount[q] = (rank + q + s) % 3 + 1;
      sdispl[q] = off;
      for (int k = 0; k < scount[q]; ++k) sbuf[off + k] = (s % 1000) * 1000000 + rank * 1000 + q * 3 + k;
      off += scount[q];
    }
    off = 0;
    for (int q = 0; q < size; ++q) {
      rcount[q] = (q + rank + s) % 3 + 1;
      rdispl[q] = off;
      off += rcount[q];
    }
    MPI_Alltoallv(sbuf, scount, sdispl, MPI_INT, rbuf, rcount, rdispl, MPI_INT, MPI_COMM_WORLD);
    for (int q = 0; q < size; ++q)
      for (int k = 0; k < rcount[q]; ++k)
        if (rbuf[rdispl[q] + k] != (s % 1000) * 1000000 + q * 1000 + rank * 3 + k) {
          fprintf(stderr, "rank %d step %d: wrong element %d from rank %d\n", rank, s, k, q);
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
    check += off;
  }
  if (rank == 0) printf("done: %d steps on %d ranks (%ld ints received)\n", steps, size, check);
  free(rbuf);
  free(sbuf);
  free(rdispl);
  free(rcount);
  free(sdispl);
  free(scount);
  MPI_Finalize();
  return 0;
}
