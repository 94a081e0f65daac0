// scoutd's GPU health watch: every --gpu-health-interval seconds, NVML is
// read directly (common/gpu_health.hpp) for the GPUs of this node's ranks
// (every GPU of the node when no rank names one) and each new problem
// becomes a finding that rides on the next evidence gather; the deciding
// observer turns it into a gpu_health verdict (fatal: attributed; warning:
// advisory) naming the node, the GPU and the ranks on it.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/gpu_health.hpp"
#include "scoutd/detect/verdict_draft.hpp"
#include "scoutd/observe/rank_evidence.hpp"

namespace scout::scoutd {

class GpuHealthWatch {
 public:
  explicit GpuHealthWatch(std::string node);
  bool available() const noexcept { return nvml_.available(); }
  const std::string& why_unavailable() const noexcept { return nvml_.why_unavailable(); }
  // One poll; `bus_ids` the GPUs of this node's ranks (empty: every GPU).
  // Returns how many new findings wait for a gather.
  std::size_t poll(const std::set<std::string>& bus_ids);
  std::size_t pending() const noexcept { return pending_.size(); }
  // The findings for a gather payload ({"gpu_health": {...}, "observer": me}).
  std::vector<nlohmann::json> take(int observer);
  void put_back(std::vector<nlohmann::json> items);

 private:
  std::string node_;
  common::GpuHealth nvml_;
  std::set<std::string> reported_;  // state findings already sent (bus:metric)
  std::vector<nlohmann::json> pending_;
};

// The deciding observer: a finding (as gathered) -> a verdict draft; the
// ranks are those whose GPU has that bus id in `ev`. Throws on malformed input.
VerdictDraft gpu_health_draft(const nlohmann::json& finding, const std::vector<RankEvidence>& ev);

}  // namespace scout::scoutd
