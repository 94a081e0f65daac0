/* Bug: rank 0 sends to itself synchronously before posting the receive
 * (a loop over partners that includes the own rank).
 *
 * expect: rank 0 in MPI_Ssend at SSEND for rank 0 (itself), the others in
 * MPI_Barrier; a deadlock (or hang) naming rank 0.
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
  if (rank == 0) {
    MPI_Ssend(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD); /* expect: SSEND */
    MPI_Recv(&y, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
