/* Bug: the master (rank 0) counts itself among its workers and waits for
 * one result more than are sent (MPI_Recv from MPI_ANY_SOURCE); the
 * workers have sent theirs and wait in the barrier.
 *
 * expect: rank 0 in MPI_Recv at RECV (any source), the workers in
 * MPI_Barrier: a deadlock of every rank (the barrier waits for rank 0).
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
    for (int w = 0; w < size; ++w) /* one too many: rank 0 sends nothing */
      MPI_Recv(&y, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* expect: RECV */
  } else {
    MPI_Send(&x, 1, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
