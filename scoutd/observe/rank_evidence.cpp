// RankEvidence to and from JSON (see rank_evidence.hpp).
#include "scoutd/observe/rank_evidence.hpp"

#include <fmt/format.h>

#include "libc3/json_num.hpp"

namespace scout::scoutd {

using nlohmann::json;

void to_json(json& j, const RankEvidence& e) {
  j = json{{"rank", e.rank}, {"node", e.node}, {"pid", e.pid}, {"attached", e.attached},
           {"alive", e.alive}, {"finalized", e.finalized}, {"seq", e.seq},
           {"fingerprint", fmt::format("{:016x}", e.fingerprint)},
           {"comm", fmt::format("{:016x}", e.comm_id)}, {"kind", e.kind},
           {"in_collective", e.in_collective}, {"stalled_s", e.stalled_s},
           {"state", std::string(1, e.state)}, {"wchan", e.wchan}, {"death_ns", e.death_ns},
           {"syscall", e.syscall}, {"rchar", e.rchar}, {"wchar", e.wchar},
           {"steps", e.steps}, {"step_s", e.step_s}, {"compute_s", e.compute_s},
           {"wait_s", e.wait_s}};
  if (!e.record_invalid.empty()) j["record_invalid"] = e.record_invalid;
  json cw = json::object();
  for (auto& [c, w] : e.comm_wait) cw[fmt::format("{:016x}", c)] = w;
  j["comm_wait"] = cw;
  json cm = json::object();
  for (auto& [c, m] : e.comm_members)
    if (e.comm_wait.count(c)) cm[fmt::format("{:016x}", c)] = m;  // only the ones in use
  j["comm_members"] = cm;
  if (!e.outsigs.empty()) {
    json os = json::array();
    for (auto& o : e.outsigs)
      os.push_back({fmt::format("{:016x}", o.comm), o.call, o.kind, fmt::format("{:016x}", o.sig)});
    j["outsigs"] = os;
  }
}

void from_json(const json& j, RankEvidence& e) {
  e.rank = c3::json_int<int>(j, "rank");
  e.node = j.at("node").get<std::string>();
  e.pid = c3::json_int<int>(j, "pid");
  e.attached = j.at("attached").get<bool>();
  if (j.contains("record_invalid") && j["record_invalid"].is_string())
    e.record_invalid = j["record_invalid"].get<std::string>().substr(0, 256);
  e.alive = j.at("alive").get<bool>();
  e.finalized = j.at("finalized").get<bool>();
  e.seq = c3::json_int<std::uint64_t>(j, "seq");
  e.fingerprint = std::stoull(j.at("fingerprint").get<std::string>(), nullptr, 16);
  e.comm_id = std::stoull(j.at("comm").get<std::string>(), nullptr, 16);
  e.kind = c3::json_int<std::uint32_t>(j, "kind");
  e.in_collective = j.at("in_collective").get<bool>();
  e.stalled_s = j.at("stalled_s").get<double>();
  auto st = j.at("state").get<std::string>();
  e.state = st.empty() ? '?' : st[0];
  e.wchan = j.at("wchan").get<std::string>();
  e.death_ns = c3::json_int<std::int64_t>(j, "death_ns");
  e.syscall = c3::json_int_or(j, "syscall", -1L);
  e.rchar = c3::json_int_or(j, "rchar", -1LL);
  e.wchar = c3::json_int_or(j, "wchar", -1LL);
  e.steps = c3::json_int_or(j, "steps", 0);
  e.step_s = j.value("step_s", 0.0);
  e.compute_s = j.value("compute_s", 0.0);
  e.wait_s = j.value("wait_s", 0.0);
  if (j.contains("comm_wait") && j["comm_wait"].is_object())
    for (auto& [k, v] : j["comm_wait"].items())
      if (v.is_number()) e.comm_wait[std::stoull(k, nullptr, 16)] = v.get<double>();
  if (j.contains("comm_members") && j["comm_members"].is_object())
    for (auto& [k, v] : j["comm_members"].items())
      if (v.is_array()) {
        std::vector<int> m;
        for (auto& x : v) m.push_back(c3::json_int_at<int>(x));
        e.comm_members[std::stoull(k, nullptr, 16)] = std::move(m);
      }
  if (j.contains("outsigs") && j["outsigs"].is_array())
    for (auto& o : j["outsigs"])
      if (o.is_array() && o.size() == 4)
        e.outsigs.push_back({std::stoull(o[0].get<std::string>(), nullptr, 16), c3::json_int_at<std::uint64_t>(o[1]),
                             c3::json_int_at<std::uint64_t>(o[2]), std::stoull(o[3].get<std::string>(), nullptr, 16)});
}

}  // namespace scout::scoutd
