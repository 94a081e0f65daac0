// scoutd's GPU health watch (see gpu_health_watch.hpp).
#include "scoutd/beside/gpu_health_watch.hpp"

#include <fmt/format.h>

#include "common/json_num.hpp"

namespace scout::scoutd {

using nlohmann::json;

GpuHealthWatch::GpuHealthWatch(std::string node) : node_(std::move(node)) {}

std::size_t GpuHealthWatch::poll(const std::set<std::string>& bus_ids) {
  std::size_t added = 0;
  for (auto& f : nvml_.poll()) {
    if (!bus_ids.empty() && !bus_ids.count(f.bus_id)) continue;  // another job's GPU
    // Events (XIDs, counter growth) are new each time; a state is sent once.
    const bool event = f.metric == "xid" || f.metric.rfind("nvlink_", 0) == 0;
    if (!event && !reported_.insert(f.bus_id + ":" + f.metric).second) continue;
    pending_.push_back({{"node", node_}, {"bus_id", f.bus_id}, {"index", f.index}, {"metric", f.metric},
                        {"value", f.value}, {"fatal", f.fatal}, {"detail", f.detail}});
    ++added;
  }
  constexpr std::size_t kKeep = 256;  // a flood of events: the newest are kept
  if (pending_.size() > kKeep) pending_.erase(pending_.begin(), pending_.end() - kKeep);
  return added;
}

std::vector<json> GpuHealthWatch::take(int observer) {
  std::vector<json> out;
  for (auto& f : pending_) out.push_back({{"gpu_health", f}, {"observer", observer}});
  pending_.clear();
  return out;
}

void GpuHealthWatch::put_back(std::vector<json> items) {
  for (auto& i : items)
    if (i.contains("gpu_health")) pending_.push_back(std::move(i["gpu_health"]));
}

VerdictDraft gpu_health_draft(const json& f, const std::vector<RankEvidence>& ev) {
  const std::string node = f.at("node").get<std::string>().substr(0, 64);
  const std::string bus = common::normalise_bus_id(f.at("bus_id").get<std::string>());
  const std::string metric = f.at("metric").get<std::string>().substr(0, 32);
  for (char c : metric)
    if (!((c >= 'a' && c <= 'z') || c == '_')) throw std::invalid_argument("gpu_health: metric");
  const double value = f.at("value").get<double>();
  const bool fatal = f.at("fatal").get<bool>();
  VerdictDraft d;
  d.kind = c3::VerdictKind::kGpuHealth;
  d.status = fatal ? c3::VerdictStatus::kAttributed : c3::VerdictStatus::kAdvisory;
  d.hosts = {node};
  for (auto& e : ev)
    if (e.gpu.present && e.node == node && !bus.empty() && common::normalise_bus_id(e.gpu.bus_id) == bus)
      d.ranks.push_back(e.rank);
  d.evidence = {{"source", "nvml"},
                {"rule", fmt::format("{} read from NVML: GPU {}: {}", fatal ? "a fatal GPU health condition" : "a GPU health warning",
                                     bus, f.at("detail").get<std::string>().substr(0, 200))},
                {"node", node},
                {"gpu", {{"bus_id", bus}, {"index", common::json_int<int>(f, "index")}}},
                {"metric", metric},
                {"value", value},
                {"detail", f.at("detail").get<std::string>().substr(0, 200)},
                {"culprits", json::array({{{"node", node}, {"bus_id", bus}, {"ranks", d.ranks}}})}};
  d.key = metric == "xid" ? fmt::format("gpu_health:{}:{}:xid{}", node, bus, static_cast<long long>(value))
                          : fmt::format("gpu_health:{}:{}:{}", node, bus, metric);
  return d;
}

}  // namespace scout::scoutd
