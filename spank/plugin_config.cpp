// plugstack.conf arguments (see plugin_config.hpp).
#include "spank/plugin_config.hpp"

#include "learn/aggregation.hpp"
#include "libc3/verdict_kind.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace scout::spank {

namespace {
bool parse_bool(const std::string& v, bool& out) {
  if (v == "yes" || v == "on" || v == "true" || v == "1") { out = true; return true; }
  if (v == "no" || v == "off" || v == "false" || v == "0") { out = false; return true; }
  return false;
}
bool parse_secs(const std::string& v, double min, double max, double& out) {
  errno = 0;
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || errno || !std::isfinite(d) || d < min || d > max) return false;
  out = d;
  return true;
}

// The fields of the shared settings (common/settings.hpp) a plugstack line sets.
double* number_of(PluginConfig& c, const std::string& key) {
  const auto* s = common::find_numeric(key);
  if (!s || !(s->homes & common::kPlugstack)) return nullptr;
  if (s == &common::kStallThreshold) return &c.stall_threshold;
  if (s == &common::kReplayInterval) return &c.replay_interval;
  if (s == &common::kReplayBudget) return &c.replay_budget;
  if (s == &common::kGrace) return &c.grace;
  if (s == &common::kCompanionWait) return &c.companion_wait;
  if (s == &common::kDstateWait) return &c.dstate_wait;
  if (s == &common::kBlameWindow) return &c.blame_window_days;
  return nullptr;
}
bool* switch_of(PluginConfig& c, const std::string& key) {
  const auto* s = common::find_switch(key);
  if (!s || !(s->homes & common::kPlugstack)) return nullptr;
  if (s == &common::kReplay) return &c.replay;
  if (s == &common::kLearn) return &c.learn;
  if (s == &common::kStacks) return &c.stacks;
  return nullptr;
}
}  // namespace

bool parse_on_off(const std::string& v, bool& out) {
  if (v == "on" || v == "(null)" || v.empty()) { out = true; return true; }
  if (v == "off") { out = false; return true; }
  return false;
}

std::string parse_plugin_args(const std::vector<std::string>& args, PluginConfig& c) {
  for (const auto& a : args) {
    auto eq = a.find('=');
    if (eq == std::string::npos)
      return "plugstack argument '" + a + "': expected key=value";
    std::string k = a.substr(0, eq), v = a.substr(eq + 1);
    auto need_path = [&](std::string& dst) -> std::string {
      if (v.empty() || v[0] != '/') return "plugstack argument " + k + "=" + v + ": expected an absolute path";
      dst = v;
      return "";
    };
    std::string err;
    if (k == "scoutd") err = need_path(c.scoutd);
    else if (k == "probe") err = need_path(c.probe);
    else if (k == "nccl_probe") {
      if (v == "none") c.nccl_probe.clear();
      else err = need_path(c.nccl_probe);
      if (!err.empty()) err += " or none";
    }
    else if (k == "srun") err = need_path(c.srun);
    else if (k == "scontrol") err = need_path(c.scontrol);
    else if (k == "spool") err = need_path(c.spool);
    else if (k == "ledger") err = need_path(c.ledger);
    else if (k == "runtime_dir") err = need_path(c.runtime_dir);
    else if (k == "default") {
      if (!parse_on_off(v, c.default_on) || v == "(null)" || v.empty())
        err = "plugstack argument default=" + v + ": expected on or off";
    } else if (k == "required") {
      if (!parse_bool(v, c.required)) err = "plugstack argument required=" + v + ": expected yes or no";
    } else if (k == "gate") {
      if (!parse_bool(v, c.gate)) err = "plugstack argument gate=" + v + ": expected yes or no";
    } else if (k == "fail_closed") {
      if (!parse_bool(v, c.fail_closed)) err = "plugstack argument fail_closed=" + v + ": expected yes or no";
    } else if (double* num = number_of(c, k)) {
      // A setting of the shared table (common/settings.hpp): its range.
      std::string why;
      if (auto d = common::parse_setting(*common::find_numeric(k), v, &why)) *num = *d;
      else err = "plugstack argument " + k + "=" + v + ": " + why;
    } else if (bool* sw = switch_of(c, k)) {
      if (auto b = common::parse_switch(v)) *sw = *b;
      else err = "plugstack argument " + k + "=" + v + ": expected on or off";
    } else if (k == "learn_aggregation") {
      learn::Aggregation a;
      if (!learn::parse_aggregation(v, a))
        err = "plugstack argument learn_aggregation=" + v + ": expected " + learn::kAggregationChoices;
      else
        c.learn_aggregation = v;
    } else if (k == "blame_jobs" || k == "blame_users") {
      double n = 0;
      if (!parse_secs(v, 1, 1000, n) || n != static_cast<int>(n))
        err = "plugstack argument " + k + "=" + v + ": expected a whole number from 1 to 1000";
      else (k == "blame_jobs" ? c.blame_jobs : c.blame_users) = static_cast<int>(n);
    } else if (k == "node_check") {
      if (!parse_on_off(v, c.node_check) || v == "(null)" || v.empty())
        err = "plugstack argument node_check=" + v + ": expected on or off";
    } else if (k == "drain_kinds" || k == "prolog_kinds") {
      auto& kinds = k == "drain_kinds" ? c.drain_kinds : c.prolog_kinds;
      kinds.clear();
      std::stringstream ss(v);
      for (std::string kind; std::getline(ss, kind, ',');) {
        const auto parsed = c3::verdict_kind_from(kind);
        if (!parsed || !c3::drainable(*parsed))
          return "plugstack argument " + k + "=" + v + ": '" + kind + "' is not a drainable kind; expected " +
                 c3::drainable_kinds_text();
        kinds.push_back(kind);
      }
      if (kinds.empty()) return "plugstack argument " + k + "=: expected a comma-separated list of kinds";
    } else {
      return "plugstack argument '" + k + "': unknown key; expected one of scoutd, probe, nccl_probe, srun, "
             "scontrol, spool, ledger, runtime_dir, default, required, stall_threshold, grace, "
             "gate, drain_kinds, prolog_kinds, fail_closed, companion_wait, learn, learn_aggregation, stacks, replay, replay_interval, replay_budget, "
             "blame_jobs, blame_users, blame_window, node_check, dstate_wait";
    }
    if (!err.empty()) return err;
  }
  return "";
}

std::string read_plugstack_args(const std::string& path, std::vector<std::string>& args) {
  std::ifstream in(path);
  if (!in) return "cannot read " + path;
  for (std::string line; std::getline(in, line);) {
    std::stringstream ss(line);
    std::string control, plugin;
    if (!(ss >> control >> plugin) || control[0] == '#') continue;
    if (plugin.size() < 8 || plugin.substr(plugin.size() - 8) != "scout.so") continue;
    args.clear();
    for (std::string a; ss >> a;) args.push_back(a);
    return "";
  }
  return "no scout.so line in " + path;
}

}  // namespace scout::spank
