/* Bug: rank 1 receives from the wrong source (it computes its partner as
 * the last rank instead of rank 0; with two ranks that is itself), while
 * rank 0 waits in a synchronous send to it.
 *
 * expect: rank 0 in MPI_Ssend at SSEND for rank 1, rank 1 in MPI_Recv at
 * RECV for the wrong rank: at 2 ranks a deadlock of rank 1 alone (it
 * waits for itself); at 3 or more a deadlock of ranks 0, 1 and the last
 * (in MPI_Barrier, waited for by rank 1).
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
  if (rank == 0) MPI_Ssend(&x, 1, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD); /* expect: SSEND */
  if (rank == 1) MPI_Recv(&y, 1, MPI_DOUBLE, size - 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* expect: RECV */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
