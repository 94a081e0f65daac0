/* Bug: the last rank never leaves a convergence loop (its tolerance
 * test can never pass: it compares with a negative tolerance), so it
 * never reaches the next MPI_Allreduce the others wait in.
 *
 * expect: hang naming the last rank, outside MPI (running) in main at
 * SPIN; the others in MPI_Allreduce at line ALLREDUCE; at 2 ranks
 * inconclusive (a long compute phase looks the same).
 * scout-expect: hang
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
  volatile double r = 1.0;
  const double tol = rank == size - 1 ? -1.0 : 1e-3;
  while (r > tol) { /* expect: SPIN */
    r *= 0.5;
    if (r < 1e-300) r = 1.0;
  }
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* expect: ALLREDUCE */
  if (rank == 0) printf("done: %d steps on %d ranks (%g)\n", steps, size, sum);
  MPI_Finalize();
  return 0;
}
