/* A rank that leaves without MPI_Finalize: the last rank returns from main
 * on an early path (a "done" check that forgot MPI_Finalize) while the
 * others wait for it in MPI_Barrier; the launcher then tears the job down.
 *
 * expect: crash attributed to the last rank; the summary says it exited
 *         (status 0) without calling MPI_Finalize, at 2 ranks too (no
 *         strict minority of deaths is needed: the exit is its own).
 * Before the bug, `steps` healthy steps of 2 ms (argv[1], default 500).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 500;
  double x = rank, y = 0;
  for (int s = 0; s < steps; ++s) {
    struct timespec t = {0, 2000000L};
    nanosleep(&t, NULL);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  if (rank == size - 1) {
    printf("rank %d: done early\n", rank);
    return 0; /* expect: EXIT (no MPI_Finalize) */
  }
  MPI_Barrier(MPI_COMM_WORLD);
  printf("rank %d: done\n", rank);
  MPI_Finalize();
  return 0;
}
