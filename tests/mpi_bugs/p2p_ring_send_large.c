/* Bug: a ring shift of 1 MiB blocks with MPI_Send before MPI_Recv:
 * correct while messages are buffered, a deadlock at this size.
 *
 * expect: deadlock of every rank, each in MPI_Send at line SEND for the
 * next: "both sides sending".
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
  MPI_Send(a, n, MPI_DOUBLE, (rank + 1) % size, 0, MPI_COMM_WORLD); /* expect: SEND */
  MPI_Recv(b, n, MPI_DOUBLE, (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  free(a);
  free(b);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
