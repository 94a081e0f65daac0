// ReplayRunner: runs replay cycles beside the live job, in one background
// thread at the lowest CPU priority (SCHED_IDLE, nice 19), pinned to one core
// at a time so a bad core can be named, paced to a CPU budget.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
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
  std::string device;   // "cpu3"
  int core = -1;
  std::string recipe;
  std::uint64_t signature = 0;
  std::uint64_t elapsed_ns = 0, cpu_ns = 0;
};

// What one observer reports for a cycle, or for the re-runs of one device.
struct Report {
  long cycle = 0;
  int rerun_of = -1;                 // -1: the cycle itself; else core re-run
  std::string rerun_recipe;
  std::string node;
  std::string cpu_class;
  std::vector<DeviceResult> results;
  double cpu_s = 0, wall_s = 0;      // what it cost
  std::uint64_t started_unix_ms = 0, finished_unix_ms = 0;
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
  void rerun(long cycle, int core, Recipe r, int times);
  std::vector<Report> take_finished();                // not yet taken
  void put_back(std::vector<Report> reports);         // delivery failed: retry later
  std::size_t pending() const;                        // finished, not yet taken
  bool busy() const;
  const std::vector<int>& cores() const { return cores_; }
  double budget() const { return opt_.budget; }

 private:
  struct Job {
    long cycle;
    int core;           // -1: full cycle
    Recipe recipe;
    int times;
  };
  void loop();
  Report run_job(const Job& j);
  void pace(std::uint64_t cpu_ns);

  std::string node_;
  ReplayOptions opt_;
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
