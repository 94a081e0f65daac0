// Compute stragglers: statistical consensus over the ranks' median compute
// time per step (median and robust scale, an absolute and a relative
// threshold), confirmed over K gathers that each saw new steps of the rank
// before a verdict; the verdict carries per-rank scores (rank median / peer
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
  double absolute_s = 0.005;  // at most +5 ms over the peer median (see absolute_guard) ...
  double relative = 1.2;      // ... and 1.2x the peer median
  int confirmations = 3;      // gathers with new steps before a verdict
  int min_steps = 4;          // steps a rank must have completed to be compared
};

// The absolute threshold of the collective and communication stragglers:
// the configured absolute_s (the healthy peers' own jitter enters through the
// robust-scale threshold). Scaling it with the median was tried and named
// ranks that shared a core on an oversubscribed host: see the .cpp.
double absolute_guard(double configured_s, double median_s);

class StragglerTracker {
 public:
  explicit StragglerTracker(StragglerOptions o = {}) : opt_(o) {}
  struct Result {
    std::vector<VerdictDraft> verdicts;     // newly confirmed stragglers
    std::vector<std::string> resolved;      // keys of open incidents now healthy
    double median_compute_s = 0;
    bool compared = false;                  // enough ranks had steps
  };
  // `open` are the keys of straggler incidents already recorded.
  Result update(const std::vector<RankEvidence>& ranks, const std::set<std::string>& open);
  static std::string key_for(int rank);
  StragglerOptions& options() { return opt_; }

 private:
  StragglerOptions opt_;
  std::map<int, int> confirm_, last_steps_, healthy_;
};

}  // namespace scout::scoutd

namespace scout::scoutd {

// Communication stragglers: equivalent communicators (same size, pairwise
// disjoint: the rows of a grid, its columns) are compared by
// the median duration of their collectives (members learnt from which ranks
// use each one); the slow ones, confirmed over K gathers, are intersected.
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
  Result update(const std::vector<RankEvidence>& ranks, const std::set<std::string>& open);
  StragglerOptions& options() { return opt_; }

 private:
  StragglerOptions opt_;
  std::string last_set_;
  int confirm_ = 0, healthy_ = 0;
};

}  // namespace scout::scoutd
