// ReplayRunner: runs replay cycles beside the live job, in one background
// thread at the lowest CPU priority (SCHED_IDLE, nice 19), pinned to one core
// at a time so a bad core can be named, paced to a CPU budget.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "replay/recipes.hpp"

namespace scout::replay {

struct ReplayOptions {
  std::vector<int> cores;            // empty: every CPU this process may use
  std::vector<Recipe> recipes;       // empty: all of them
  double budget = 0.01;              // fraction of the node's CPU time
  int node_cpus = 0;                 // CPUs of the node (0: online CPUs)
  int scale = 1;
  bool idle_priority = true;         // SCHED_IDLE + nice 19 (else normal)
};

struct DeviceResult {
  std::string device;   // "cpu3", "gpu0/sm17"
  int core = -1;        // CPU core (-1 for a GPU SM)
  std::string recipe;
  std::uint64_t signature = 0;
  std::uint64_t elapsed_ns = 0, cpu_ns = 0;
  std::string cls{};    // comparison class when not the report's CPU class (GPU model)
  int gpu = -1, sm = -1;
};

// The GPU side, when scoutd is built with CUDA (see gpu.hpp): how many
// devices, and one cycle of a device's recipes (all, or only one) with the
// test flips applied; results named gpuD/smS with the model as class.
struct GpuBackend {
  // GPUs on the node; negative (with `error`) when present but unusable.
  std::function<int(std::string& error)> devices;
  std::function<std::vector<DeviceResult>(int dev, std::uint64_t seed,
                                          const std::vector<FaultInjector::GpuFlip>& flips,
                                          const std::string& only_recipe, std::string& error)>
      run;
};
void set_gpu_backend(GpuBackend b);

// What one observer reports for a cycle, or for the re-runs of one device.
struct Report {
  long cycle = 0;
  int rerun_of = -1;                 // -1: the cycle itself; else core re-run
  std::string rerun_recipe;
  std::string rerun_device;          // the device re-run ("" for the cycle)
  std::string node;
  std::string cpu_class;
  std::vector<DeviceResult> results;
  double cpu_s = 0, wall_s = 0;      // what it cost
  std::uint64_t started_unix_ms = 0, finished_unix_ms = 0;
  std::string gpu_error{};            // a GPU that could not run its recipes
};

// The seed of a cycle: the same on every node.
std::uint64_t cycle_seed(long cycle) noexcept;

class ReplayRunner {
 public:
  ReplayRunner(std::string node, ReplayOptions opt, FaultInjector faults);
  ~ReplayRunner();
  ReplayRunner(const ReplayRunner&) = delete;
  ReplayRunner& operator=(const ReplayRunner&) = delete;

  void start_cycle(long cycle);                       // queued; a cycle runs once
  // Re-runs one device: a CPU core (recipe name of a CPU recipe) or a GPU
  // SM (device "gpuD/smS", recipe "gpu_...").
  void rerun(long cycle, const std::string& device, const std::string& recipe, int times);
  std::vector<Report> take_finished();                // not yet taken
  void put_back(std::vector<Report> reports);         // delivery failed: retry later
  std::size_t pending() const;                        // finished, not yet taken
  bool busy() const;
  const std::vector<int>& cores() const { return cores_; }
  double budget() const { return budget_.load(); }
  // scoutctl set replay_budget: the next pause uses it.
  void set_budget(double b) { budget_.store(b); }

 private:
  struct Job {
    long cycle;
    std::string device;  // "": full cycle
    std::string recipe;
    int times;
  };
  void loop();
  Report run_job(const Job& j);
  void pace(std::uint64_t cpu_ns);

  std::string node_;
  ReplayOptions opt_;
  std::atomic<double> budget_{0.01};
  FaultInjector faults_;
  std::vector<int> cores_;
  std::string class_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::vector<Report> done_;
  long last_started_ = 0;
  bool running_ = false, stop_ = false;
  std::thread thread_;
};

}  // namespace scout::replay
