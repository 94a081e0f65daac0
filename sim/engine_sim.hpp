// N simulated scoutds running scoutd's own round engine (round/engine.hpp:
// the trigger and gather rounds, the progress, straggler and output
// participants, the detectors, the decider and the incident book) over
// libc3's TreeRound on the simulated network and virtual clock, with rank
// evidence from a synchronous workload (workload.hpp). The same code scoutd
// runs over MPI; only the transport, the clock, the rank source and the
// verdict sink (in memory) differ. What the tests and scout-sim read: every
// verdict the deciding observer committed (virtual time, kind, status,
// ranks), each gather's bytes into the root and its host CPU time there,
// bytes sent per member.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "libc3/tree_round.hpp"
#include "scoutd/daemon/config.hpp"
#include "scoutd/round/engine.hpp"
#include "sim/run_checker.hpp"
#include "sim/sim_network.hpp"
#include "sim/workload.hpp"

namespace scout::sim {

struct EngineSimConfig {
  int members = 8;
  LinkModel link;
  std::uint64_t seed = 1;
  WorkloadOptions work;
  // scoutd's own defaults, unless a test changes them.
  scoutd::ScoutdConfig scoutd = default_scoutd();
  static scoutd::ScoutdConfig default_scoutd();
};

struct SimVerdict {
  double at_s = 0;  // committed at the deciding observer (virtual seconds)
  int by = -1;      // the deciding observer
  std::string kind, status, key;
  std::vector<int> ranks;
};

struct GatherCost {
  double at_s = 0;
  std::uint64_t root_bytes_in = 0;  // payload bytes the root received from its children
  double root_cpu_s = 0;            // host CPU seconds at the root: merging and deciding
  int root = -1;
};

class EngineSim {
 public:
  explicit EngineSim(EngineSimConfig cfg);
  ~EngineSim();

  void crash(int member, double t);                 // a scoutd lost for good
  void freeze(int member, double t, double for_s);  // a scoutd stopped, then resumed
  void partition(std::vector<int> side_of_member, double t);  // messages cross no side
  void heal(double t);
  void slow(int member, double latency_factor);     // its links' latency multiplied
  void loss(double probability);                    // each message lost with it
  void run_until(double t);
  double now_s() const;

  const std::vector<SimVerdict>& verdicts() const noexcept { return verdicts_; }
  const std::vector<GatherCost>& gathers() const noexcept { return gathers_; }
  std::uint64_t bytes_sent(int m) const { return net_.bytes_sent(m); }
  std::uint64_t periods(int m) const;
  // The members member m sees alive (after its last round).
  std::size_t alive_seen_by(int m) const;
  const Workload& workload() const noexcept { return work_; }
  std::uint64_t trace_digest() const;
  // The invariants checked on every commit and round (run_checker.hpp).
  const RunChecker& checker() const noexcept { return checker_; }
  // Each round a member completes (virtual time, member, a gather round?).
  std::function<void(double, int, bool, const c3::RoundResult&)> on_round;

 private:
  struct Member;
  void start_period(int m);
  void begin(int m, scoutd::RoundEngine::Round r, bool gather);
  void step(int m);
  void schedule_wake(int m);
  bool frozen(int m) const;
  Clock::time_point at_s(double t) const;
  std::size_t side_alive(int m) const;

  EngineSimConfig cfg_;
  VirtualClock clock_;
  SimNetwork net_;
  Workload work_;
  std::vector<std::unique_ptr<Member>> members_;
  std::vector<SimVerdict> verdicts_;
  std::map<std::string, std::size_t> by_vkey_;  // first commit of each verdict
  std::vector<GatherCost> gathers_;
  Clock::time_point epoch_{};
  RunChecker checker_;
  double side_changed_at_ = 0;  // a crash, a partition or its healing
};

}  // namespace scout::sim
