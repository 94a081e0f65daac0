/* Correct: a library that MPI_Comm_dup's the application's communicator at
 * init and does its own collectives and point-to-point on the duplicate,
 * called between the application's world collectives and even while the
 * application has a world MPI_Irecv/MPI_Isend pending with the same tag, as
 * PETSc, hypre, Trilinos and other solver libraries do. Messages on the two
 * communicators carry different values, so any mix-up is caught. The library
 * frees its communicator at finalize. Must stay silent.
 *
 * expect: none (scout stays silent).
 * scout-expect: none
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static MPI_Comm lib_comm = MPI_COMM_NULL;

static void fail(const char* what) {
  fprintf(stderr, "wrong %s\n", what);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void lib_init(MPI_Comm comm) { MPI_Comm_dup(comm, &lib_comm); }
static void lib_finalize(void) { MPI_Comm_free(&lib_comm); }

/* the library's step: a ring shift and a dot product on its own communicator */
static long lib_step(long x) {
  int rank = 0, size = 0;
  MPI_Comm_rank(lib_comm, &rank);
  MPI_Comm_size(lib_comm, &size);
  long in = -1, dot = -1, mine = -x;
  MPI_Sendrecv(&mine, 1, MPI_LONG, (rank + 1) % size, 5, &in, 1, MPI_LONG, (rank + size - 1) % size, 5,
               lib_comm, MPI_STATUS_IGNORE);
  if (in != -(x - rank + (rank + size - 1) % size)) fail("library message");
  MPI_Allreduce(&in, &dot, 1, MPI_LONG, MPI_SUM, lib_comm);
  return dot;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 100;
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  lib_init(MPI_COMM_WORLD);
  long total = 0;
  for (int s = 0; s < steps; ++s) {
    long out = 1000000L + rank * 100 + s, in = -1, x = rank + s, sum = 0;
    MPI_Request rq[2];
    MPI_Irecv(&in, 1, MPI_LONG, left, 5, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(&out, 1, MPI_LONG, right, 5, MPI_COMM_WORLD, &rq[1]);
    const long dot = lib_step(x); /* same tag, same neighbours, other communicator */
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    if (in != 1000000L + left * 100 + s) fail("application message");
    if (dot != -((long)size * (size - 1) / 2 + (long)size * s)) fail("library sum");
    MPI_Allreduce(&x, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != -dot) fail("application sum");
    if (s % 10 == 0) MPI_Barrier(MPI_COMM_WORLD);
    total += sum;
  }
  lib_finalize();
  if (rank == 0) printf("done: %d steps on %d ranks (%ld)\n", steps, size, total);
  MPI_Finalize();
  return 0;
}
