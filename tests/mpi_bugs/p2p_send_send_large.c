/* Bug: ranks 0 and 1 both MPI_Send 1 MiB to each other before
 * receiving. Small messages would be buffered (eager) and the program would
 * appear to work; at this size both sends wait for the matching receive.
 *
 * expect: deadlock of ranks 0 and 1, both in MPI_Send (SEND0, SEND1):
 * "both sides sending".
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
  const int n = 1 << 17;
  double* a = calloc((size_t)n, sizeof(double));
  double* b = calloc((size_t)n, sizeof(double));
  if (rank == 0) {
    MPI_Send(a, n, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD); /* expect: SEND0 */
    MPI_Recv(b, n, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    MPI_Send(a, n, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD); /* expect: SEND1 */
    MPI_Recv(b, n, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  free(a);
  free(b);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
