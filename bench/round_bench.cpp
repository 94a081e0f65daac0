// Consensus round latency over the observer world (libc3 TreeRound), as
// scoutd runs it: the trigger reduction (fixed 48 bytes) and the evidence
// gather (256 synthetic ranks per observer), healthy, then with one observer
// dead (SIGKILL): the round that detects the loss and the rounds after it.
// Run as: mpirun --enable-recovery -np K round_bench [ranks_per_observer].
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "libc3/tree_round.hpp"

using scout::c3::Bytes;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int me = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int per = argc > 1 ? std::atoi(argv[1]) : 256;
  scout::c3::TreeRound tree(MPI_COMM_WORLD, {0.5});
  Bytes trigger(48, 1);
  Bytes evidence(static_cast<std::size_t>(per) * 320, 7);  // ~320 B of JSON per rank
  auto max_combine = [](Bytes& acc, const Bytes& c) {
    for (std::size_t i = 0; i < acc.size() && i < c.size(); ++i) acc[i] = std::max(acc[i], c[i]);
  };
  auto concat = [](Bytes& acc, const Bytes& c) { acc.insert(acc.end(), c.begin(), c.end()); };
  auto decide = [](const Bytes&, const std::vector<int>&) { return Bytes(64, 0); };
  auto timed = [&](int rounds, bool gather, std::vector<double>& out, std::size_t* lost) {
    for (int r = 0; r < rounds; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);  // healthy phase only: align the start
      auto res = tree.run(gather ? evidence : trigger, gather ? scout::c3::TreeRound::Combine(concat)
                                                              : scout::c3::TreeRound::Combine(max_combine),
                          decide);
      out.push_back(res.seconds * 1e3);
      if (lost) *lost += res.newly_lost.size();
    }
  };
  std::vector<double> trig, gath;
  timed(30, false, trig, nullptr);
  timed(10, true, gath, nullptr);
  // One observer dies; no more barriers (they would hang).
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == size - 1) {
    std::fflush(stdout);
    raise(SIGKILL);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::vector<double> detect, after;
  std::size_t lost = 0;
  for (int r = 0; r < 12; ++r) {
    auto res = tree.run(trigger, max_combine, decide);
    (lost == 0 ? detect : after).push_back(res.seconds * 1e3);
    lost += res.newly_lost.size();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  double mine[4] = {median(trig), median(gath), detect.empty() ? 0 : detect.back(), median(after)};
  if (me == 0) {
    std::printf("%9s %6s %14s %14s %16s %18s %8s %12s\n", "observers", "ranks", "trigger ms",
                "gather ms", "loss round ms", "after loss ms", "lost", "bytes/round");
    std::printf("%9d %6d %14.3f %14.3f %16.1f %18.3f %8zu %12.0f\n", size, per * size, mine[0],
                mine[1], mine[2], mine[3], lost,
                static_cast<double>(tree.bytes_sent()) / static_cast<double>(tree.round()));
  }
  std::fflush(stdout);
  _exit(0);  // MPI_Finalize would wait for the dead member
}
