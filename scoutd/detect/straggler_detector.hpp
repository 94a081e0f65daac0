// Compute stragglers: statistical consensus over the ranks' median compute
// time per step (median and robust scale, an absolute guard from the job's
// jitter and a relative threshold, and above by more than its own steps'
// spread), confirmed over K gathers that each saw new steps of the rank, at
// least a second apart (a shared host's bursts are shorter), before a verdict; the verdict carries per-rank scores (rank median / peer
// median). A confirmed straggler that stays within the thresholds for K
// gathers is resolved. State lives at the deciding observer.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "libc3/verdict_rules.hpp"
#include "scoutd/detect/progress_detector.hpp"

namespace scout::scoutd {

struct StragglerOptions {
  double absolute_s = 0.0005;  // the absolute guard's floor (see absolute_guard) ...
  double relative = 1.2;      // ... and 1.2x the peer median
  int confirmations = 3;      // gathers with new steps before a verdict
  int min_steps = 4;          // steps a rank must have completed to be compared
  double jitter_k = 4.0;      // the guard: jitter_k x the ranks' median jitter, at least absolute_s
  double own_k = 2.0;         // ... and above own_k x the rank's own jitter (a burst is not a slowdown)
  double confirm_gap_s = 1.0; // confirmations at least this far apart (update's now_s)
};

// The absolute threshold of the collective and communication stragglers,
// from the job's own jitter: jitter_k x the median over the compared ranks
// of each one's robust spread of its recent steps (or collectives of the
// communicator), never below the floor absolute_s. A slow rank's own jitter
// is one of many in the median; on a host where every rank shares cores
// every rank's steps vary, and the guard grows with them.
double absolute_guard(double floor_s, double jitter_k, std::vector<double> jitters);

class StragglerTracker {
 public:
  explicit StragglerTracker(StragglerOptions o = {}) : opt_(o) {}
  struct Result {
    std::vector<VerdictDraft> verdicts;     // newly confirmed stragglers
    std::vector<std::string> resolved;      // keys of open incidents now healthy
    double median_compute_s = 0;
    bool compared = false;                  // enough ranks had steps
  };
  // `open` are the keys of straggler incidents already recorded; `now_s` the
  // deciding observer's clock (negative: confirmations are not spaced).
  Result update(const std::vector<RankEvidence>& ranks, const std::set<std::string>& open, double now_s = -1);
  static std::string key_for(int rank);
  StragglerOptions& options() { return opt_; }
  // The guard of the last comparison (0 before the first).
  double last_guard() const { return last_guard_; }

 private:
  StragglerOptions opt_;
  double last_guard_ = 0;
  std::map<int, int> confirm_, healthy_;
  std::map<int, std::pair<int, std::uint64_t>> last_seen_;  // steps and seq at its last confirmation
  std::map<int, double> last_confirm_s_;
};

}  // namespace scout::scoutd

namespace scout::scoutd {

// Communication stragglers: equivalent communicators (same size, pairwise
// disjoint: the rows of a grid, its columns) are compared by
// the median duration of their collectives (members learnt from which ranks
// use each one); a communicator is slow above the jitter guard, the relative
// threshold and its own spread; the slow ones, confirmed over K gathers at
// least confirm_gap_s apart, are intersected.
// If they meet at exactly one rank and no healthy communicator of the
// comparison contains it, that rank's endpoint (host) is attributed;
// otherwise the slow communicators are reported, inconclusive.
class CommTracker {
 public:
  explicit CommTracker(StragglerOptions o = {}) : opt_(o) {}
  struct Result {
    std::vector<VerdictDraft> verdicts;
    std::vector<std::string> resolved;
  };
  // `now_s`: the deciding observer's clock (negative: confirmations are not spaced).
  Result update(const std::vector<RankEvidence>& ranks, const std::set<std::string>& open, double now_s = -1);
  StragglerOptions& options() { return opt_; }
  double last_guard() const { return last_guard_; }

 private:
  StragglerOptions opt_;
  double last_guard_ = 0;
  std::string last_set_;
  int confirm_ = 0, healthy_ = 0;
  double last_confirm_s_ = -1e18;
};

}  // namespace scout::scoutd
