// Training steps without code changes: the step collective is the most
// frequent collective fingerprint in a rank's recent history (the gradient
// allreduce of a training loop), or the first of a kind named by
// SCOUT_STEP_COLLECTIVE; a step runs from one exit of it to the next. Per
// step: step time, wait (inside collectives) and compute (the rest).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "libc3/rank_record.hpp"

namespace scout::scoutd {

struct StepStats {
  int steps = 0;              // complete steps in the history
  std::uint64_t last_step_seq = 0;  // seq of the last step boundary
  double step_s = 0, compute_s = 0, wait_s = 0;  // medians over the window
  double compute_jitter_s = 0;  // robust spread of compute over the window (1.4826 x MAD)
  std::uint64_t step_fingerprint = 0;
};

// `events` sorted by seq (gaps allowed: a step with a gap is skipped);
// step_kind 0 = automatic, else a CollKind whose most frequent fingerprint
// marks steps; window = how many recent steps the medians cover.
StepStats analyse_steps(const std::vector<c3::CollEvent>& events, std::uint32_t step_kind = 0,
                        int window = 8);

// Median duration (entry to completion) of the last `per_comm` completed
// collectives on each communicator with at least 3 of them; with `jitter`,
// also their robust spread (1.4826 x MAD) per communicator.
std::map<std::uint64_t, double> comm_durations(const std::vector<c3::CollEvent>& events,
                                               std::size_t per_comm = 16,
                                               std::map<std::uint64_t, double>* jitter = nullptr);

// 1.4826 x the median absolute deviation (0 for fewer than 3 values).
double mad_spread(const std::vector<double>& v);

// CollKind for a name like "allreduce"; 0 if unknown.
std::uint32_t coll_kind_from_name(const std::string& name);

}  // namespace scout::scoutd
