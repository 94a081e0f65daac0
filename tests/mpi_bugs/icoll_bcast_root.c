/* Bug: a non-blocking broadcast whose root differs at the last rank
 * (it names itself), completed by MPI_Wait: each side believes it sends.
 * 1 MiB.
 *
 * expect: divergence or hang at the MPI_Wait; two ranks: inconclusive,
 * both groups stated; more: the last rank named.
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
  const int n = 1 << 17;
  double* a = calloc((size_t)n, sizeof(double));
  MPI_Request rq;
  const int root = rank == size - 1 ? rank : 0;
  MPI_Ibcast(a, n, MPI_DOUBLE, root, MPI_COMM_WORLD, &rq);
  MPI_Wait(&rq, MPI_STATUS_IGNORE); /* expect: WAIT */
  MPI_Barrier(MPI_COMM_WORLD);
  free(a);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
