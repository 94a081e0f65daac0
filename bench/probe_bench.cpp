// Probe cost: ns per 8-byte MPI_Allreduce on MPI_COMM_SELF through the
// preloaded probe (MPI_Allreduce) and without it (PMPI_Allreduce, the same
// call minus the wrapper), interleaved in one run. Run it with the probe
// preloaded and SCOUT_JOB_ID set (bench/run-bench.sh does). Target: <= 50 ns.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const long n = argc > 1 ? std::atol(argv[1]) : 2000000;
  const int elems = argc > 2 ? std::atoi(argv[2]) : 1;  // doubles per Allreduce
  std::vector<double> inv(static_cast<std::size_t>(elems), 1.0), outv(inv.size(), 0.0);
  double* in_p = inv.data();
  double* out_p = outv.data();
  using Clock = std::chrono::steady_clock;
  double best_plain = 1e9, best_probe = 1e9;
  for (int round = 0; round < 7; ++round) {
    auto t0 = Clock::now();
    for (long i = 0; i < n; ++i) PMPI_Allreduce(in_p, out_p, elems, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
    auto t1 = Clock::now();
    for (long i = 0; i < n; ++i) MPI_Allreduce(in_p, out_p, elems, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
    auto t2 = Clock::now();
    best_plain = std::min(best_plain, std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
    best_probe = std::min(best_probe, std::chrono::duration<double, std::nano>(t2 - t1).count() / n);
  }
  const bool probed = std::getenv("SCOUT_JOB_ID") != nullptr;
  const char* every = std::getenv("SCOUT_OUTSIG_EVERY");
  const std::string title = std::to_string(elems * 8) + "-byte MPI_Allreduce, output signed every " +
                            (every ? std::string(every) : std::string("64")) + " (0 off)";
  std::printf("%-34s %10s\n", title.c_str(), "ns/call");
  std::printf("%-34s %10.1f\n", "without probe (PMPI_Allreduce)", best_plain);
  std::printf("%-34s %10.1f\n", probed ? "with probe (MPI_Allreduce)" : "MPI_Allreduce (probe NOT loaded)", best_probe);
  if (elems == 1)
    std::printf("%-34s %10.1f   target <= 50 ns: %s\n", "added by the probe", best_probe - best_plain,
                best_probe - best_plain <= 50 ? "ok" : "MISS");
  else
    std::printf("%-34s %10.1f\n", "added by the probe", best_probe - best_plain);
  std::printf("%-34s %10.2fx\n", "ratio", best_probe / best_plain);
  MPI_Finalize();
  return 0;
}
