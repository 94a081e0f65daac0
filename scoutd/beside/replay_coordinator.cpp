// Replay consensus (see replay_coordinator.hpp).
#include "scoutd/beside/replay_coordinator.hpp"

#include "common/json_num.hpp"

#include "libc3/verdict_rules.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace scout::replay {

using nlohmann::json;

void to_json(json& j, const DeviceResult& d) {
  j = json{{"device", d.device}, {"core", d.core}, {"recipe", d.recipe},
           {"sig", fmt::format("{:016x}", d.signature)}, {"elapsed_ns", d.elapsed_ns},
           {"cpu_ns", d.cpu_ns}};
  if (!d.cls.empty()) j["class"] = d.cls;
  if (d.gpu >= 0) {
    j["gpu"] = d.gpu;
    j["sm"] = d.sm;
  }
}
void from_json(const json& j, DeviceResult& d) {
  d.device = j.at("device").get<std::string>();
  d.core = common::json_int<int>(j, "core");
  d.recipe = j.at("recipe").get<std::string>();
  d.signature = std::stoull(j.at("sig").get<std::string>(), nullptr, 16);
  d.elapsed_ns = j.value("elapsed_ns", std::uint64_t{0});
  d.cpu_ns = j.value("cpu_ns", std::uint64_t{0});
  d.cls = j.value("class", "");
  d.gpu = common::json_int_or(j, "gpu", -1);
  d.sm = common::json_int_or(j, "sm", -1);
}
void to_json(json& j, const Report& r) {
  j = json{{"cycle", r.cycle}, {"rerun_of", r.rerun_of}, {"rerun_recipe", r.rerun_recipe},
           {"rerun_device", r.rerun_device}, {"gpu_error", r.gpu_error},
           {"node", r.node}, {"cpu_class", r.cpu_class}, {"results", r.results},
           {"cpu_s", r.cpu_s}, {"wall_s", r.wall_s}, {"started_ms", r.started_unix_ms},
           {"finished_ms", r.finished_unix_ms}};
}
void from_json(const json& j, Report& r) {
  r.cycle = common::json_int<long>(j, "cycle");
  r.rerun_of = common::json_int_or(j, "rerun_of", -1);
  r.rerun_recipe = j.value("rerun_recipe", "");
  r.rerun_device = j.value("rerun_device", "");
  r.gpu_error = j.value("gpu_error", "");
  r.node = j.at("node").get<std::string>();
  r.cpu_class = j.value("cpu_class", "");
  r.results = j.at("results").get<std::vector<DeviceResult>>();
  r.cpu_s = j.value("cpu_s", 0.0);
  r.wall_s = j.value("wall_s", 0.0);
  r.started_unix_ms = j.value("started_ms", std::uint64_t{0});
  r.finished_unix_ms = j.value("finished_ms", std::uint64_t{0});
}

}  // namespace scout::replay

namespace scout::scoutd {

using nlohmann::json;

namespace {
std::string hex(std::uint64_t v) { return fmt::format("{:016x}", v); }
}  // namespace

Comparison compare_cycle(const std::map<int, replay::Report>& reports) {
  Comparison out;
  struct Entry {
    int observer;
    const replay::Report* rep;
    const replay::DeviceResult* res;
  };
  // (cpu class, recipe) -> every device's result
  std::map<std::pair<std::string, std::string>, std::vector<Entry>> groups;
  std::set<std::string> devices;
  for (auto& [obs, rep] : reports)
    for (auto& res : rep.results) {
      groups[{res.cls.empty() ? rep.cpu_class : res.cls, res.recipe}].push_back({obs, &rep, &res});
      devices.insert(rep.node + ":" + res.device);
    }
  out.devices = static_cast<int>(devices.size());
  for (auto& [key, entries] : groups) {
    const int n = static_cast<int>(entries.size());
    if (n < 2) {
      out.unpaired += n;
      continue;
    }
    std::vector<std::uint64_t> sigs;
    for (auto& e : entries) sigs.push_back(e.res->signature);
    const auto res = c3::exact_consensus(sigs);
    if (res.outcome == c3::ExactOutcome::kAgree) continue;
    if (res.outcome == c3::ExactOutcome::kAttributed) {
      for (std::size_t i : res.outliers) {
        const Entry& e = entries[i];
        out.dissents.push_back({e.observer, e.rep->node, e.res->device, e.res->recipe, key.first,
                                e.res->core, e.res->signature, *res.majority_value,
                                static_cast<int>(res.majority_count), n, e.res->gpu, e.res->sm});
      }
    } else {
      NoMajority nm{key.second, key.first, {}, n};
      for (auto& e : entries) nm.values[e.res->signature].push_back(e.rep->node + ":" + e.res->device);
      out.no_majority.push_back(std::move(nm));
    }
  }
  return out;
}

std::optional<long> ReplayCoordinator::want_start(double now_s, bool demand) {
  if (last_start_s_ < 0) last_start_s_ = now_s;  // the first period starts with the job
  if (current_) return std::nullopt;
  const bool due = opt_.interval_s > 0 && now_s - last_start_s_ >= opt_.interval_s;
  if (!demand && !due) return std::nullopt;
  Cycle c;
  c.id = next_id_++;
  c.started_s = now_s;
  current_ = std::move(c);
  last_start_s_ = now_s;
  return current_->id;
}

void ReplayCoordinator::observed_start(long id, double now_s) {
  if (id < next_id_) return;  // ours, or older
  next_id_ = id + 1;
  last_start_s_ = now_s;
}

void ReplayCoordinator::on_report(int observer, const replay::Report& r) {
  if (!current_ || r.cycle != current_->id) return;  // late or foreign: ignored
  if (r.rerun_device.empty()) {
    if (!current_->compared) current_->reports[observer] = r;
    return;
  }
  for (auto& p : current_->pending)
    if (p.d.observer == observer && p.d.device == r.rerun_device && p.d.recipe == r.rerun_recipe && !p.reported) {
      for (auto& res : r.results) p.rerun_sigs.push_back(res.signature);
      p.reported = true;
      return;
    }
}

ReplayCoordinator::Step ReplayCoordinator::evaluate(double now_s, const std::set<int>& live,
                                                    std::int64_t now_ms) {
  Step step;
  if (!current_) return step;
  Cycle& c = *current_;
  if (!c.compared) {
    bool all = true;
    for (int o : live) all = all && c.reports.count(o);
    if (!all && now_s - c.started_s < opt_.timeout_s) return step;
    c.cmp = compare_cycle(c.reports);
    c.compared = true;
    c.compared_s = now_s;
    for (auto& d : c.cmp.dissents) {
      c.pending.push_back({d, {}, false});
      step.reruns.push_back({d.observer, c.id, d.core, d.recipe, opt_.reruns, d.device});
    }
    for (auto& nm : c.cmp.no_majority) {
      VerdictDraft v;
      v.kind = c3::VerdictKind::kSdc;
      v.status = c3::VerdictStatus::kInconclusive;
      json values = json::array();
      for (auto& [sig, devs] : nm.values) values.push_back({{"signature", hex(sig)}, {"devices", devs}});
      v.evidence = {{"source", "replay"}, {"rule", "no signature has a strict majority of the devices"},
                    {"cycle", c.id}, {"recipe", nm.recipe}, {"cpu_class", nm.cpu_class},
                    {"devices", nm.devices}, {"values", values}};
      v.key = fmt::format("sdc:nomajority:{}:{}", nm.recipe, nm.cpu_class);
      step.verdicts.push_back(std::move(v));
      step.verdict_observers.push_back(-1);
    }
    if (!c.pending.empty()) return step;
  }
  if (!c.pending.empty()) {
    bool all = std::all_of(c.pending.begin(), c.pending.end(), [](auto& p) { return p.reported; });
    if (!all && now_s - c.compared_s < opt_.timeout_s) return step;
    for (auto& p : c.pending) {
      int again = 0;
      for (auto s : p.rerun_sigs) again += s != p.d.majority;
      const bool recurring = again > 0;
      VerdictDraft v;
      v.kind = recurring ? c3::VerdictKind::kSdc : c3::VerdictKind::kTransient;
      v.status = recurring ? c3::VerdictStatus::kAttributed : c3::VerdictStatus::kAdvisory;
      v.hosts = {p.d.node};
      json reruns = json::array();
      for (auto s : p.rerun_sigs) reruns.push_back(hex(s));
      v.evidence = {{"source", "replay"},
                    {"rule", recurring ? "differs from a strict majority of equivalent devices, "
                                         "and again when re-run"
                                       : "differed from a strict majority once; the re-runs agreed"},
                    {"cycle", c.id}, {"node", p.d.node}, {"device", p.d.device}, {"core", p.d.core},
                    {"recipe", p.d.recipe}, {"cpu_class", p.d.cpu_class},
                    {"signature", hex(p.d.signature)}, {"majority_signature", hex(p.d.majority)},
                    {"agreeing_devices", p.d.agree}, {"devices", p.d.devices},
                    {"reruns", reruns}, {"reruns_differing", again},
                    {"reruns_reported", p.reported}};
      if (p.d.gpu >= 0) {
        v.evidence["gpu"] = p.d.gpu;
        v.evidence["sm"] = p.d.sm;
        v.evidence.erase("core");
      }
      v.key = recurring ? fmt::format("sdc:replay:{}:{}:{}", p.d.node, p.d.device, p.d.recipe)
                        : fmt::format("transient:{}:{}:{}:{}", c.id, p.d.node, p.d.device, p.d.recipe);
      step.verdicts.push_back(std::move(v));
      step.verdict_observers.push_back(p.d.observer);
    }
  }
  // The cycle is decided: its record.
  std::int64_t started = now_ms;
  double cpu = 0;
  for (auto& [o, r] : c.reports) {
    if (r.started_unix_ms) started = std::min<std::int64_t>(started, static_cast<std::int64_t>(r.started_unix_ms));
    cpu += r.cpu_s;
  }
  bool complete = true;
  for (int o : live) complete = complete && c.reports.count(o);
  // A GPU that could not run its recipes (an ECC error, an illegal
  // instruction, out of memory, a deadline) left its SMs unchecked: the
  // cycle is not clean, so it certifies no checkpoint.
  json gpu_errors = json::array();
  for (auto& [o, r] : c.reports)
    if (!r.gpu_error.empty()) gpu_errors.push_back({{"node", r.node}, {"error", r.gpu_error}});
  const bool clean = c.cmp.dissents.empty() && c.cmp.no_majority.empty();
  std::string outcome = !clean              ? "dissent"
                        : !gpu_errors.empty() ? "gpu_error"
                        : (complete && c.cmp.devices > 0 ? "clean" : "incomplete");
  json detail = {{"dissents", c.cmp.dissents.size()}, {"no_majority", c.cmp.no_majority.size()},
                 {"unpaired", c.cmp.unpaired}, {"wall_s", now_s - c.started_s}};
  if (!gpu_errors.empty()) detail["gpu_errors"] = gpu_errors;
  json rec = {{"cycle", c.id}, {"started_ms", started}, {"finished_ms", now_ms},
              {"observers", c.reports.size()}, {"expected", live.size()},
              {"devices", c.cmp.devices}, {"outcome", outcome}, {"cpu_s", cpu}, {"detail", detail}};
  step.cycle_done = std::make_pair(c.id, rec);
  current_.reset();
  return step;
}

}  // namespace scout::scoutd
