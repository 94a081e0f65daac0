/* A receive whose only sender has left: rank 1 reaches MPI_Finalize
 * without sending what rank 0 waits for in MPI_Recv (its send was lost in
 * a branch that never runs). Other ranks finalize too.
 *
 * expect: hang attributed to rank 0; the summary names rank 0 in MPI_Recv
 *         at line RECV for rank 1 and rank 1 outside MPI (finalized): "the
 *         ranks it waits for called MPI_Finalize without sending what it
 *         waits for".
 * Before the bug, `steps` healthy steps of 2 ms (argv[1], default 500).
 * scout-expect: hang
 * scout-steps: 500
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int steps = argc > 1 ? atoi(argv[1]) : 500;
  double x = rank, y = 0;
  for (int s = 0; s < steps; ++s) {
    struct timespec t = {0, 2000000L};
    nanosleep(&t, NULL);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  if (rank == 0) MPI_Recv(&y, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* expect: RECV */
  if (rank == 1 && y < -1) MPI_Send(&x, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);        /* never runs */
  printf("rank %d: done\n", rank);
  MPI_Finalize();
  return 0;
}
