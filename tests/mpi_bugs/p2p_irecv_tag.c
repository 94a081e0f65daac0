/* Bug: rank 1 posts its receive with the wrong tag (MPI_Irecv, then
 * MPI_Wait); rank 0's synchronous send with tag 1 never matches it.
 *
 * expect: deadlock or hang naming ranks 0 and 1: rank 0 in MPI_Ssend at
 * SSEND, rank 1 in MPI_Wait at WAIT.
 * scout-expect: deadlock
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
  double y = 0;
  MPI_Request rq;
  if (rank == 0) MPI_Ssend(&x, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD); /* expect: SSEND */
  if (rank == 1) {
    MPI_Irecv(&y, 1, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE); /* expect: WAIT */
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
