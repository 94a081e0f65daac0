// Replay cost: CPU time of each recipe on one core, a cycle per core and its
// share of a node's CPU at the default interval; and the pacing: the share of
// the node's CPU a cycle takes for a given budget, on an idle node and on a
// node where every CPU is busy (baseline: the same cycle unpaced).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "replay/recipes.hpp"
#include "replay/runner.hpp"

using namespace scout::replay;

namespace {
Report one_cycle(double budget, bool idle, long id) {
  ReplayOptions o;
  o.budget = budget;
  o.idle_priority = idle;
  ReplayRunner r("bench", o, {});
  r.start_cycle(id);
  for (;;) {
    auto got = r.take_finished();
    if (!got.empty()) return got.front();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}
}  // namespace

int main() {
  const int ncpu = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("%-16s %12s\n", "recipe", "CPU ms/run");
  double per_core = 0;
  for (Recipe rc : kAllRecipes) {
    std::vector<double> ms;
    for (int i = 0; i < 5; ++i) ms.push_back(run_recipe(rc, 1000 + static_cast<std::uint64_t>(i)).cpu_ns / 1e6);
    std::sort(ms.begin(), ms.end());
    std::printf("%-16s %12.2f\n", recipe_name(rc), ms[2]);
    per_core += ms[2];
  }
  std::printf("%-16s %12.2f   (all recipes, one core)\n", "cycle per core", per_core);
  std::printf("%-16s %12.4f %%  of the node's CPU at the default interval (600 s), any core count\n",
              "cost", per_core / 1e3 / 600 * 100);
  std::printf("\n%-34s %8s %10s %10s %8s\n", "one cycle over all cores", "budget", "wall s", "CPU share", "ratio");
  struct Row {
    const char* what;
    double budget;
    bool load, idle;
  };
  const Row rows[] = {{"unpaced, idle node (baseline)", 1.0, false, false},
                      {"paced, idle node", 0.05, false, false},
                      {"paced, idle node", 0.01, false, false},
                      {"paced, every CPU busy", 0.05, true, false},
                      {"paced, every CPU busy, SCHED_IDLE", 0.05, true, true}};
  long id = 1;
  for (auto& row : rows) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> hogs;
    if (row.load)
      for (int i = 0; i < ncpu; ++i)
        hogs.emplace_back([&] {
          volatile double x = 1;
          while (!stop.load(std::memory_order_relaxed)) x = x * 1.0000001 + 1e-9;
        });
    Report rep = one_cycle(row.budget, row.idle, id++);
    stop = true;
    for (auto& h : hogs) h.join();
    const double share = rep.cpu_s / (rep.wall_s * ncpu);
    std::printf("%-34s %8.2f %10.2f %9.3f%% %7.2fx\n", row.what, row.budget, rep.wall_s, share * 100,
                share / row.budget);
  }
  std::printf("(CPU share = replay CPU time / (wall time x %d CPUs); ratio = share / budget, at most 1\n"
              " means the budget held; SCHED_IDLE under full load yields to the job, so its cycle\n"
              " takes longer, by design)\n", ncpu);
  return 0;
}
