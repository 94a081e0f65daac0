/* Correct: every rank calls the same collectives in the same order, with
 * different amounts of work between them (rank r sleeps r ms a step), on
 * MPI_COMM_WORLD and on a duplicate. Must stay silent.
 *
 * expect: no verdict.
 * scout-expect: none
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  const int steps = argc > 1 ? atoi(argv[1]) : 500;
  double x = rank, sum = 0;
  for (int s = 0; s < steps; ++s) {
    struct timespec t = {0, 1000000L * (rank % 4)};
    nanosleep(&t, NULL);
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (s % 10 == 0) MPI_Barrier(dup);
  }
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Comm_free(&dup);
  MPI_Finalize();
  return 0;
}
