/* Bug: the last rank calls MPI_Alltoall where the others call
 * MPI_Allgather (a transpose the others do not do).
 *
 * expect: divergence; two ranks: inconclusive, both groups stated; more:
 * the last rank named; "the ranks call collectives in a different order".
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
  double* b = calloc((size_t)n * size, sizeof(double));
  if (rank != size - 1) MPI_Allgather(a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, MPI_COMM_WORLD); /* expect: ALLGATHER */
  else MPI_Alltoall(a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, MPI_COMM_WORLD); /* expect: ALLTOALL */
  MPI_Barrier(MPI_COMM_WORLD);
  free(a);
  free(b);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
