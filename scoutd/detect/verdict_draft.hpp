// A verdict as a detector proposes it, before the decider (decide/) checks
// that its incident is new and commits it. `key` names the incident, so the
// same problem seen in many rounds is recorded once while it stays open.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "libc3/verdict_kind.hpp"

namespace scout::scoutd {

struct VerdictDraft {
  c3::VerdictKind kind = c3::VerdictKind::kHang;
  c3::VerdictStatus status = c3::VerdictStatus::kInconclusive;
  std::vector<int> ranks;
  std::vector<std::string> hosts;
  nlohmann::json evidence;
  std::string key;     // identifies the incident (dedup while open)
};

}  // namespace scout::scoutd
