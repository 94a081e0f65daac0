// mt_allreduce: an MPI_THREAD_MULTIPLE program for the tests: T threads per
// rank (--threads, default 2) each run MPI_Allreduce on their own duplicate
// of MPI_COMM_WORLD, concurrently, with a little compute between calls, and,
// with --p2p, a ring exchange (MPI_Sendrecv to the next rank) on the same
// communicator after each allreduce. Faults, each in one thread of one rank:
//   --stop R:I       rank R stops itself (SIGSTOP, every thread) at iteration I
//   --hang R:T:I     rank R's thread T stops calling MPI at iteration I and
//                    loops outside MPI; its other threads go on
//   --slow R:T:F     rank R's thread T computes F times longer between calls
//   --diverge R:T:I  rank R's thread T calls MPI_Allgather instead at I
#include <mpi.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  long iters = 2000;
  int threads = 2;
  bool p2p = false;
  int stop_rank = -1;
  long stop_at = -1;
  int hang_rank = -1, hang_thread = -1;
  long hang_at = -1;
  int slow_rank = -1, slow_thread = -1;
  double slow_factor = 1;
  int div_rank = -1, div_thread = -1;
  long div_at = -1;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--p2p")) p2p = true;
    else if (!std::strcmp(argv[i], "--stop") && i + 1 < argc && std::sscanf(argv[++i], "%d:%ld", &stop_rank, &stop_at) == 2) {}
    else if (!std::strcmp(argv[i], "--hang") && i + 1 < argc &&
             std::sscanf(argv[++i], "%d:%d:%ld", &hang_rank, &hang_thread, &hang_at) == 3) {}
    else if (!std::strcmp(argv[i], "--slow") && i + 1 < argc &&
             std::sscanf(argv[++i], "%d:%d:%lf", &slow_rank, &slow_thread, &slow_factor) == 3) {}
    else if (!std::strcmp(argv[i], "--diverge") && i + 1 < argc &&
             std::sscanf(argv[++i], "%d:%d:%ld", &div_rank, &div_thread, &div_at) == 3) {}
    else {
      std::fprintf(stderr, "usage: mt_allreduce [--iters N] [--threads T] [--p2p] [--stop RANK:ITER] "
                           "[--hang RANK:THREAD:ITER] [--slow RANK:THREAD:FACTOR] [--diverge RANK:THREAD:ITER]\n");
      return 2;
    }
  }
  if (threads < 1 || threads > 16) {
    std::fprintf(stderr, "mt_allreduce: --threads %d: expected 1-16\n", threads);
    return 2;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided != MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "mt_allreduce: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<MPI_Comm> comms(static_cast<std::size_t>(threads));
  for (auto& c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);
  auto work = [&](int t) {
    double x = rank + t, y = 0, z[64] = {};
    const double factor = rank == slow_rank && t == slow_thread ? slow_factor : 1.0;
    const auto pause = std::chrono::microseconds(static_cast<long>((200 + 100 * t) * factor));
    for (long i = 0; i < iters; ++i) {
      if (t == 0 && rank == stop_rank && i == stop_at) std::raise(SIGSTOP);
      if (rank == hang_rank && t == hang_thread && i == hang_at)
        for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // outside MPI for good
      std::this_thread::sleep_for(pause);
      if (rank == div_rank && t == div_thread && i == div_at)
        MPI_Allgather(&x, 1, MPI_DOUBLE, z, 1, MPI_DOUBLE, comms[static_cast<std::size_t>(t)]);
      else
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comms[static_cast<std::size_t>(t)]);
      x = y / 1000;
      if (p2p && size > 1) {
        double in = 0;
        MPI_Sendrecv(&x, 1, MPI_DOUBLE, (rank + 1) % size, t, &in, 1, MPI_DOUBLE, (rank + size - 1) % size, t,
                     comms[static_cast<std::size_t>(t)], MPI_STATUS_IGNORE);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
  for (auto& c : comms) MPI_Comm_free(&c);
  if (rank == 0) std::printf("mt_allreduce: done, %ld iterations in %d threads\n", iters, threads);
  MPI_Finalize();
  return 0;
}
