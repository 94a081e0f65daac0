// The progress detectors of scoutd, as pure functions over the evidence the
// observers gathered: hang (culprit behind the position a strict majority
// reached), stall (the culprit's process is stopped, in D state or a
// zombie), divergence (same position, different collective fingerprint),
// communication hang (everyone waiting in the same collective: inconclusive,
// scoped to that communicator), crash (a rank died first while its peers
// lived on), I/O straggler (the rank behind is blocked inside a read/write
// system call). Never guesses: no strict majority means inconclusive.
#pragma once

#include <optional>
#include <vector>

#include "common/settings.hpp"
#include "scoutd/detect/verdict_draft.hpp"
#include "scoutd/observe/rank_evidence.hpp"

namespace scout::scoutd {

struct DetectorOptions {
  double stall_threshold_s = common::kStallThreshold.def;
  double death_margin_s = 0.2;  // deaths this close to the first one count as one event
  // A death that left no fatal-signal record (SIGKILL, an exit) is a crash
  // only once its peers outlived it this long: a launcher or Slurm tearing
  // the job down kills every rank, spread over a moment on a loaded host,
  // and stops the observers too.
  double death_confirm_s = 1.0;
  // The observers are stopping (the job is over): what is still pending is
  // decided on the evidence there is (an exit before MPI_Finalize).
  bool stopping = false;
};

// Crash rule over ranks whose process vanished without MPI_Finalize. Sets
// *pending when a death without a fatal-signal record is younger than
// death_confirm_s (decide again later; not at all if the job ends first).
std::optional<VerdictDraft> detect_crash(const std::vector<RankEvidence>& ranks, const DetectorOptions& opt,
                                         bool* pending = nullptr);
// Hang / stall / divergence / communication hang over the live ranks.
std::vector<VerdictDraft> detect_progress(const std::vector<RankEvidence>& ranks,
                                          const DetectorOptions& opt);

}  // namespace scout::scoutd
