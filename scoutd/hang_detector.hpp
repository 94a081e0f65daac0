// The progress detectors of scoutd, as pure functions over the evidence the
// observers gathered: hang (culprit behind the position a strict majority
// reached), stall (the culprit's process is stopped, in D state or a
// zombie), divergence (same position, different collective fingerprint),
// communication hang (everyone waiting in the same collective: inconclusive,
// scoped to that communicator), crash (a rank died first while its peers
// lived on), I/O straggler (the rank behind is blocked inside a read/write
// system call, e.g. a checkpoint write to a slow filesystem). Never guesses: no strict majority means inconclusive.
#pragma once

#include <cstdint>
#include <map>
#include <vector>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::scoutd {

struct RankEvidence {
  int rank = -1;
  std::string node;
  int pid = 0;
  bool attached = false;     // its record has been seen
  bool alive = true;
  bool finalized = false;
  std::uint64_t seq = 0;
  std::uint64_t fingerprint = 0;
  std::uint64_t comm_id = 0;
  std::uint32_t kind = 0;
  bool in_collective = false;
  double stalled_s = 0;      // since its record last showed progress
  char state = '?';          // /proc state letter; 'X' gone
  std::string wchan;
  std::int64_t death_ns = 0; // CLOCK_MONOTONIC when its process went away
  long syscall = -1;         // blocking system call, from /proc (-1 none)
  long long rchar = -1, wchar = -1;  // /proc/<pid>/io
  int steps = 0;             // training steps seen (see step_timing.hpp)
  double step_s = 0, compute_s = 0, wait_s = 0;  // medians over recent steps
  // Median duration of this rank's recent collectives per communicator.
  std::map<std::uint64_t, double> comm_wait;
  // Memberships (world ranks) of its communicators, as the probe published.
  std::map<std::uint64_t, std::vector<int>> comm_members;
  // Its most recent collective-output signatures.
  struct OutSig {
    std::uint64_t comm = 0, call = 0, kind = 0, sig = 0;
  };
  std::vector<OutSig> outsigs;
};

void to_json(nlohmann::json& j, const RankEvidence& e);
void from_json(const nlohmann::json& j, RankEvidence& e);

struct VerdictDraft {
  std::string kind;    // hang, stall, crash, divergence
  std::string status;  // attributed, inconclusive
  std::vector<int> ranks;
  std::vector<std::string> hosts;
  nlohmann::json evidence;
  std::string key;     // identifies the incident (dedup while open)
};

struct DetectorOptions {
  double stall_threshold_s = 10.0;
  double death_margin_s = 0.2;  // deaths this close to the first one count as one event
};

// Crash rule over ranks whose process vanished without MPI_Finalize.
std::optional<VerdictDraft> detect_crash(const std::vector<RankEvidence>& ranks,
                                         const DetectorOptions& opt);
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
// Hang / stall / divergence / communication hang over the live ranks.
std::vector<VerdictDraft> detect_progress(const std::vector<RankEvidence>& ranks,
                                          const DetectorOptions& opt);

}  // namespace scout::scoutd
