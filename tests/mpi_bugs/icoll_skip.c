/* Bug: the last rank skips a non-blocking reduction (nothing to add)
 * and goes on to the barrier; the others wait for their MPI_Iallreduce.
 *
 * expect: a hang or divergence naming the last rank (two ranks:
 * inconclusive), the others in MPI_Wait, the last in MPI_Barrier.
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
  MPI_Request rq = MPI_REQUEST_NULL;
  if (rank != size - 1) MPI_Iallreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq);
  MPI_Wait(&rq, MPI_STATUS_IGNORE); /* expect: WAIT */
  MPI_Barrier(MPI_COMM_WORLD); /* expect: BARRIER */
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
