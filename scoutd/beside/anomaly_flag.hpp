// A node's telemetry anomaly flag (beside/fed_learner): what a gather
// carries to the deciding observer, which records it as an advisory
// telemetry_anomaly verdict. On its own so that the wire layer needs no
// learner (and no Eigen).
#pragma once

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
VerdictDraft telemetry_anomaly_draft(const AnomalyFlag& f);

}  // namespace scout::scoutd
