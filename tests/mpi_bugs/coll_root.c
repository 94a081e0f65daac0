/* Bug: the last rank passes another root to MPI_Bcast than the others
 * (root 0 at every rank but the last, which names itself). Each side
 * believes it is sending; 1 MiB messages go by rendezvous, so both wait.
 *
 * The ranks between them receive from rank 0 and go on to the barrier:
 * they still say what they called at the position (their recent
 * collectives), so with three ranks or more a strict majority names the last.
 *
 * expect: divergence; two ranks: inconclusive, both groups stated; more: the
 * last rank named; "the ranks call bcast with different roots".
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
  const int n = 1 << 17;
  double* buf = calloc((size_t)n, sizeof(double));
  double x = rank, sum = 0;
  for (int s = 0; s < steps; ++s) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const int root = rank == size - 1 ? rank : 0;
  MPI_Bcast(buf, n, MPI_DOUBLE, root, MPI_COMM_WORLD); /* expect: BCAST */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  free(buf);
  MPI_Finalize();
  return 0;
}
