/* Correct: a halo exchange on a periodic 2-D process grid, as stencil, CFD,
 * climate and lattice codes do it. MPI_Dims_create picks the grid; with 2 or
 * 3 ranks one dimension holds a single rank, which is then its own north and
 * south neighbour (and with 2 in a row, west == east). Each step every rank
 * posts four MPI_Irecv for its ghost edges, then four MPI_Isend of its
 * boundary edges, one tag per direction of travel so that two messages between
 * the same pair of ranks cannot be confused, and completes all eight with one
 * MPI_Waitall; then an MPI_Allreduce of a "residual". Must stay silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 16 /* doubles per edge */

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  int dims[2] = {0, 0};
  MPI_Dims_create(size, 2, dims);
  const int px = rank % dims[0], py = rank / dims[0];
  int nb[4]; /* 0 west, 1 east, 2 south, 3 north; direction d ^ 1 is opposite to d */
  nb[0] = py * dims[0] + (px + dims[0] - 1) % dims[0];
  nb[1] = py * dims[0] + (px + 1) % dims[0];
  nb[2] = ((py + dims[1] - 1) % dims[1]) * dims[0] + px;
  nb[3] = ((py + 1) % dims[1]) * dims[0] + px;
  double out[4][N], in[4][N], res = 0;
  for (int s = 0; s < steps; ++s) {
    MPI_Request rq[8];
    for (int d = 0; d < 4; ++d) /* the neighbour in direction d sends towards d ^ 1 */
      MPI_Irecv(in[d], N, MPI_DOUBLE, nb[d], d ^ 1, MPI_COMM_WORLD, &rq[d]);
    for (int d = 0; d < 4; ++d) {
      for (int i = 0; i < N; ++i) out[d][i] = rank * 100000.0 + s * 100 + d * 20 + i;
      MPI_Isend(out[d], N, MPI_DOUBLE, nb[d], d, MPI_COMM_WORLD, &rq[4 + d]);
    }
    MPI_Waitall(8, rq, MPI_STATUSES_IGNORE);
    double local = 0;
    for (int d = 0; d < 4; ++d)
      for (int i = 0; i < N; ++i) {
        if (in[d][i] != nb[d] * 100000.0 + s * 100 + (d ^ 1) * 20 + i) {
          fprintf(stderr, "rank %d step %d: wrong ghost %d[%d]\n", rank, s, d, i);
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
        local += in[d][0] == in[d][i] ? 0 : 1;
      }
    MPI_Allreduce(&local, &res, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (res != 4.0 * (N - 1) * size) {
      fprintf(stderr, "rank %d step %d: wrong residual %g\n", rank, s, res);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (rank == 0) printf("done: %d steps on %d ranks (%dx%d grid)\n", steps, size, dims[0], dims[1]);
  MPI_Finalize();
  return 0;
}
