// A node's telemetry anomaly flag (see anomaly_flag.hpp).
#include "scoutd/beside/anomaly_flag.hpp"

#include <fmt/format.h>

namespace scout::scoutd {

using nlohmann::json;

void to_json(json& j, const AnomalyFlag& f) {
  json top = json::array();
  for (auto& [n, v] : f.top) top.push_back({{"feature", n}, {"share", v}});
  j = json{{"rank", f.rank}, {"node", f.node}, {"score", f.score}, {"threshold", f.threshold},
           {"consecutive", f.consecutive}, {"round", f.round}, {"top_features", top}};
}
void from_json(const json& j, AnomalyFlag& f) {
  f.rank = j.at("rank").get<int>();
  f.node = j.at("node").get<std::string>();
  f.score = j.at("score").get<double>();
  f.threshold = j.at("threshold").get<double>();
  f.consecutive = j.at("consecutive").get<int>();
  f.round = j.value("round", 0L);
  for (auto& t : j.value("top_features", json::array()))
    f.top.emplace_back(t.at("feature").get<std::string>(), t.at("share").get<double>());
}

bool telemetry_consensus(std::uint32_t above, std::uint32_t scored) {
  return above <= 1 || 2 * static_cast<std::uint64_t>(above) < scored;
}

VerdictDraft telemetry_anomaly_draft(const AnomalyFlag& f, std::uint32_t above, std::uint32_t scored) {
  VerdictDraft d;
  d.kind = c3::VerdictKind::kTelemetryAnomaly;
  d.status = c3::VerdictStatus::kAdvisory;
  d.ranks = {f.rank};
  d.hosts = {f.node};
  json top = json::array();
  for (auto& [n, v] : f.top) top.push_back({{"feature", n}, {"share", v}});
  d.evidence = {{"source", "telemetry"},
                {"rule", fmt::format("reconstruction error above the federated threshold for {} "
                                     "consecutive windows", f.consecutive)},
                {"score", f.score}, {"threshold", f.threshold}, {"windows", f.consecutive},
                {"round", f.round}, {"top_features", top}, {"ranks_above", above}, {"ranks_scored", scored},
                {"culprits", json::array({{{"rank", f.rank}, {"node", f.node}}})}};
  d.key = fmt::format("telemetry:{}", f.rank);
  return d;
}

}  // namespace scout::scoutd
