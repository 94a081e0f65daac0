// Silent data corruption seen in collective outputs: the probe signs every
// Nth output of a communicator; this tracker, at the deciding observer,
// compares them by libc3's exact rule once the communicator has reported.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "scoutd/detect/verdict_draft.hpp"
#include "scoutd/observe/rank_evidence.hpp"

namespace scout::scoutd {

// Collective-output signatures, accumulated over gathers (each gather
// carries the signatures read since the last one): once every member of the
// communicator reported a signed collective (communicator, ordinal), or it
// waited `max_age` gathers, a rank whose output differs from a strict
// majority of the communicator's members -> sdc (source collective_output);
// differing outputs without a strict majority -> sdc inconclusive.
class OutputTracker {
 public:
  explicit OutputTracker(int max_age = 4) : max_age_(max_age) {}
  std::vector<VerdictDraft> update(const std::vector<RankEvidence>& ranks);
  std::size_t pending() const { return groups_.size(); }

 private:
  struct Entry {
    std::uint64_t sig = 0;
    std::string node;
  };
  struct Group {
    std::map<int, Entry> by_rank;
    std::uint64_t kind = 0;
    int age = 0;
  };
  int max_age_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, Group> groups_;
  std::map<std::uint64_t, std::size_t> comm_size_;
  std::set<int> named_;
  std::set<std::uint64_t> inconclusive_;
};
}  // namespace scout::scoutd
