// A node's telemetry anomaly flag (beside/fed_learner): what a gather
// carries to the deciding observer, which records it as an advisory
// telemetry_anomaly verdict. On its own so that the wire layer needs no
// learner (and no Eigen).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "scoutd/detect/verdict_draft.hpp"

namespace scout::scoutd {

struct AnomalyFlag {
  int rank = -1;
  std::string node;
  double score = 0, threshold = 0;
  int consecutive = 0;
  long round = 0;
  std::vector<std::pair<std::string, double>> top;  // feature, share of the error
};
void to_json(nlohmann::json& j, const AnomalyFlag& f);
void from_json(const nlohmann::json& j, AnomalyFlag& f);
// The advisory telemetry_anomaly verdict a flag stands for (never drains).
// `above`/`scored`: the job's ranks above the threshold in their latest
// window, and those scored, when the flag was taken.
VerdictDraft telemetry_anomaly_draft(const AnomalyFlag& f, std::uint32_t above = 0, std::uint32_t scored = 0);
// SCOUT's contract for telemetry: a rank is named only against a majority
// that scored normal in the same windows. When two ranks or more are above
// the threshold at once and they are not a strict minority of the ranks
// scored, the change is the job's or the host's (a load spike, a new phase),
// not one rank's: the flags wait (and are withdrawn by the nodes when the
// ranks come back under the threshold). A single rank above is named even in
// a job of two ranks: it is compared with the learned normal, not only with
// its peers.
bool telemetry_consensus(std::uint32_t above, std::uint32_t scored);

}  // namespace scout::scoutd
