// Job and step ids as scout takes them from Slurm, scout-run or a user:
// the one check, used wherever one is read (the probe's record names,
// scoutd's options, the service's requests, the epilog, scoutctl).
#pragma once

#include <string>

namespace scout::common {

// A decimal job id of 1-20 digits.
inline bool valid_job_id(const std::string& s) noexcept {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// A step id: 1-15 of [0-9a-z_] (Slurm's numbers, "batch", "extern", "0").
inline bool valid_step_id(const std::string& s) noexcept {
  if (s.empty() || s.size() > 15) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '_')) return false;
  return true;
}

}  // namespace scout::common
