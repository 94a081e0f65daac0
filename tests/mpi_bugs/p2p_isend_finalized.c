/* Bug: rank 0 starts its 1 MiB send to rank 1 with the wrong tag
 * (MPI_Isend), never waits for it, and finalizes; rank 1 waits in MPI_Recv
 * for the message with the tag it expects. The other ranks finalize.
 *
 * expect: a hang naming rank 1 in MPI_Recv at RECV for rank 0, rank 0
 * outside MPI (finalized) or in MPI_Finalize.
 * scout-expect: hang
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
  if (rank == 0) MPI_Isend(a, n, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD, &rq); /* never waited for */
  if (rank == 1) MPI_Recv(a, n, MPI_DOUBLE, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* expect: RECV */
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  free(a);
  return 0;
}
