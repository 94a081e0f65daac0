/* Bug: rank 0 scatters from itself, every other rank expects the data
 * from the last rank (the root was read from a file only rank 0 read).
 *
 * expect: divergence; two ranks: inconclusive, both groups stated; more:
 * rank 0 named; "the ranks call scatter with different roots".
 * scout-expect: divergence
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 20;
  double x = rank, sum = 0;
  for (int s = 0; s < steps; ++s) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const int n = 1 << 15;
  double* a = calloc((size_t)n * size, sizeof(double));
  double* b = calloc((size_t)n, sizeof(double));
  const int root = rank == 0 ? 0 : size - 1;
  MPI_Scatter(a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, root, MPI_COMM_WORLD); /* expect: SCATTER */
  MPI_Barrier(MPI_COMM_WORLD);
  free(a);
  free(b);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
