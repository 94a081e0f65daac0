// mt_allreduce: a healthy MPI_THREAD_MULTIPLE program for the tests: two
// threads per rank each run MPI_Allreduce on their own duplicate of
// MPI_COMM_WORLD, concurrently, with a little compute between calls; with
// --stop R:S, rank R stops itself (SIGSTOP) after S iterations.
#include <mpi.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

int main(int argc, char** argv) {
  long iters = 2000;
  int stop_rank = -1;
  long stop_at = -1;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--stop") && i + 1 < argc && std::sscanf(argv[++i], "%d:%ld", &stop_rank, &stop_at) == 2) {}
    else {
      std::fprintf(stderr, "usage: mt_allreduce [--iters N] [--stop RANK:ITER]\n");
      return 2;
    }
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided != MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "mt_allreduce: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm comms[2];
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
  auto work = [&](int t) {
    double x = rank + t, y = 0;
    for (long i = 0; i < iters; ++i) {
      if (t == 0 && rank == stop_rank && i == stop_at) std::raise(SIGSTOP);
      std::this_thread::sleep_for(std::chrono::microseconds(200 + 100 * t));
      MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comms[t]);
      x = y / 1000;
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  MPI_Comm_free(&comms[0]);
  MPI_Comm_free(&comms[1]);
  if (rank == 0) std::printf("mt_allreduce: done, %ld iterations in 2 threads\n", iters);
  MPI_Finalize();
  return 0;
}
