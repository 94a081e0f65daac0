/* Correct: a program that handles MPI errors itself. It sets
 * MPI_ERRORS_RETURN on MPI_COMM_WORLD, tries a send to a rank that does not
 * exist, checks that the call returned MPI_ERR_RANK, and goes on with its
 * steps; then it puts MPI_ERRORS_ARE_FATAL back and finishes. The probe's
 * record of fatal MPI errors must change nothing of this. Must stay silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  double x = rank, sum = 0;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int rc = MPI_Send(&x, 1, MPI_DOUBLE, size, 0, MPI_COMM_WORLD);
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  if (cls != MPI_ERR_RANK) {
    fprintf(stderr, "ok_errors_return: rank %d: a send to rank %d returned class %d, not MPI_ERR_RANK\n", rank,
            size, cls);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  for (int s = 0; s < steps; ++s) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("done: %d steps on %d ranks (%g), the bad send refused\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
