/* Bug: after the healthy steps, rank 1 sends to a rank that does not exist
 * (the job's size) under the default error handler, MPI_ERRORS_ARE_FATAL:
 * MPI ends the job at rank 1's MPI_Send. The process exits without a signal
 * or MPI_Abort of its own, so without the probe's record of the error it
 * would look like a crash (a node fault) rather than the program's bug.
 * With "restore" after the steps argument, the program first sets
 * MPI_ERRORS_RETURN and then puts MPI_ERRORS_ARE_FATAL back (as libraries
 * that guard a call do): the same verdict.
 *
 * expect: abort naming rank 1: "MPI_Send failed with MPI_ERR_RANK".
 * scout-expect: abort
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 20;
  if (argc > 2 && strcmp(argv[2], "restore") == 0) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  }
  double x = rank, sum = 0;
  for (int s = 0; s < steps; ++s) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 1) MPI_Send(&x, 1, MPI_DOUBLE, size, 0, MPI_COMM_WORLD); /* expect: SEND */
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
