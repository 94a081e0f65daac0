/* Bug: the last rank leaves the program early (an error path that calls
 * exit() without MPI_Finalize, as a library's fatal-error helper does);
 * the others wait in MPI_Allreduce for it until the launcher ends the job.
 *
 * expect: abort naming the last rank (the application ended the job: no
 * drain): "rank N exited (status 0) without calling MPI_Finalize while
 * rank 0 in MPI_Allreduce waited", at 2 ranks too.
 * scout-expect: abort
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
  if (rank == size - 1) {
    fprintf(stderr, "rank %d: cannot go on, leaving\n", rank);
    exit(0); /* expect: EXIT */
  }
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* expect: ALLREDUCE */
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
