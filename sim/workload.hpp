// A synchronous training job as the simulator's rank evidence: every rank
// computes (a base time with per-rank, per-step jitter), then enters one
// allreduce on the world communicator; the job's step is as long as its
// slowest rank's compute plus the collective. Faults change it from a
// virtual time on: a stopped rank (SIGSTOP: state T, the others wait in the
// next collective), a crashed rank (gone, the others wait), a straggler
// (its compute slower by a factor; everyone's step follows it). The
// evidence is a pure function of the virtual time and the seed, so a run
// is reproducible byte for byte.
//
// SimRanks is one member's view (its block of ranks) as scoutd's
// RankSource, summarised the way RankWatcher summarises its records.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "scoutd/observe/rank_watcher.hpp"

namespace scout::sim {

struct WorkloadOptions {
  int ranks_per_member = 8;
  double compute_s = 0.15;     // a rank's compute per step
  double collective_s = 0.05;  // the allreduce itself, once everyone is in
  double jitter = 0.05;        // relative spread of a rank's compute per step
  std::uint64_t seed = 1;
  // Faults (rank -1: none), from a virtual time on.
  int stopped_rank = -1;
  double stop_at_s = 0;
  int crashed_rank = -1;
  double crash_at_s = 0;
  int slow_rank = -1;
  double slow_at_s = 0;
  double slow_factor = 1.0;
};

class Workload {
 public:
  Workload(WorkloadOptions o, int members);
  int ranks() const noexcept { return ranks_; }
  const WorkloadOptions& options() const noexcept { return o_; }
  // The evidence of member m's ranks at virtual time t (seconds).
  std::vector<scoutd::RankEvidence> evidence(int member, double t) const;
  // When the job stopped making progress (a stop or a crash), or a negative value.
  double halted_at() const noexcept { return halt_s_; }

 private:
  double step_s(double t) const;        // the job's step length at time t
  std::uint64_t steps_at(double t) const;  // steps completed by time t
  double rank_compute(int rank, double t) const;
  WorkloadOptions o_;
  int ranks_;
  double halt_s_ = -1;
};

class SimRanks final : public scoutd::RankSource {
 public:
  SimRanks(const Workload& w, int member, std::function<double()> now);
  const std::string& node() const noexcept override { return node_; }
  scoutd::LocalSummary summary() const override;
  std::vector<scoutd::RankEvidence> evidence(bool for_gather = false) const override;
  void mark_deaths_reported(const std::vector<int>& ranks) override;

 private:
  const Workload& w_;
  int member_;
  std::string node_;
  std::function<double()> now_;
  std::set<int> reported_;  // deaths told in a completed gather
};

}  // namespace scout::sim
