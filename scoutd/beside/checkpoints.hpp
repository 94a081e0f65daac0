// Checkpoint certification. A watcher (inotify on the job's checkpoint
// directory, plus a scan) finds complete checkpoints: a new top-level file or
// directory that stays unchanged for a settle time, or, with a marker name,
// one that has its marker (DIR/MARKER inside a directory, FILE.MARKER beside
// a file). The certifier decides each candidate's trust from the replay
// cycles and sdc verdicts in the ledger:
//   recovery_verified: a complete clean replay cycle over all devices started
//                      after the checkpoint was written, and no sdc verdict
//                      came between the last clean cycle before it and then;
//   rejected:          an sdc verdict lies in that span (the corruption may
//                      predate the checkpoint);
//   candidate:         otherwise, until one of the above happens.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sql/ledger.hpp"

namespace scout::scoutd {

struct CompleteCheckpoint {
  std::string path;
  std::int64_t written_ms = 0;  // Unix ms: newest mtime inside it
};

class CheckpointWatcher {
 public:
  // Throws std::runtime_error naming the directory when it cannot be watched.
  CheckpointWatcher(std::string dir, double settle_s, std::string marker);
  ~CheckpointWatcher();
  CheckpointWatcher(const CheckpointWatcher&) = delete;
  CheckpointWatcher& operator=(const CheckpointWatcher&) = delete;
  // Entries that became complete since the last call (each reported once).
  std::vector<CompleteCheckpoint> poll(std::int64_t now_ms);
  const std::string& dir() const { return dir_; }

 private:
  struct Seen {
    std::int64_t mtime_ms = 0, changed_ms = 0;
    bool reported = false;
  };
  std::string dir_, marker_;
  double settle_s_;
  int fd_ = -1;
  std::map<std::string, Seen> seen_;
};

struct SdcEvent {
  std::int64_t id = 0;
  std::int64_t detected_ms = 0;
  std::string summary;
};

// New state and reason for a candidate, or nothing while it stays one.
std::optional<std::pair<std::string, std::string>> certify(
    const sql::CheckpointRow& c, const std::vector<sql::ReplayCycleRow>& cycles,
    const std::vector<SdcEvent>& sdc);

// "2026-11-29T17:39:29.123Z" -> Unix ms (0 when unparseable).
using sql::iso_to_unix_ms;
using sql::unix_ms_to_iso;

}  // namespace scout::scoutd
