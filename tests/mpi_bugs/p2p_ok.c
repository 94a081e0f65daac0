/* Correct: a ring exchange each step, with MPI_Sendrecv, then with
 * MPI_Irecv/MPI_Isend/MPI_Waitall, and a synchronous send matched by a
 * posted receive. Must stay silent.
 *
 * expect: no verdict.
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
  const int steps = argc > 1 ? atoi(argv[1]) : 2000;
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double x = rank, y = 0, z = 0;
  for (int s = 0; s < steps; ++s) {
    MPI_Sendrecv(&x, 1, MPI_DOUBLE, right, 0, &y, 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Request rq[2];
    MPI_Irecv(&z, 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(&y, 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    if (rank % 2 == 0) {
      MPI_Ssend(&z, 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD);
      MPI_Recv(&x, 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&x, 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Ssend(&z, 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD);
    }
  }
  if (rank == 0) printf("done: %d steps on %d ranks\n", steps, size);
  MPI_Finalize();
  return 0;
}
