// Live-tunable settings (see tunables.hpp).
#include "common/tunables.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "common/settings.hpp"

namespace scout::common {

const std::vector<TuneKey> kTuneKeys = {
    {"stall_threshold", "seconds from 1 to 86400", "seconds without progress before a hang"},
    {"straggler_factor", "a factor from 1 to 1000", "a straggler is this many times slower than its peers"},
    {"straggler_confirmations", "an integer from 1 to 1000", "windows that confirm a straggler before a verdict"},
    {"replay_budget", "a fraction of the node's CPU time above 0 and at most 1", "replay's CPU budget"},
    {"outsig_period", "seconds from 0.1 to 3600", "how often collective-output signatures are compared"},
    {"learn", "on or off", "the federated telemetry learner (pause or resume)"},
};

std::string tune_key_list() {
  std::string out;
  for (auto& k : kTuneKeys) out += (out.empty() ? "" : ", ") + std::string(k.key);
  return out;
}

namespace {

bool number(const std::string& v, double lo, double hi, bool lo_open, double& out) {
  if (v.empty() || v.size() > 32) return false;
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(v.c_str(), &end);
  if (*end || errno || !std::isfinite(d) || d > hi || d < lo || (lo_open && d == lo)) return false;
  out = d;
  return true;
}

}  // namespace

bool set_tunable(Tunables& t, const std::string& key, const std::string& value, std::string* why) {
  const TuneKey* k = nullptr;
  for (auto& x : kTuneKeys)
    if (key == x.key) k = &x;
  if (!k) {
    if (why) *why = fmt::format("unknown setting '{}'; expected one of {}", key.substr(0, 64), tune_key_list());
    return false;
  }
  double d = 0;
  bool ok = false;
  if (key == "stall_threshold") {
    ok = number(value, kStallThreshold.min, kStallThreshold.max, false, d);
    if (ok) t.stall_threshold_s = d;
  } else if (key == "straggler_factor") {
    ok = number(value, 1, 1000, false, d);
    if (ok) t.straggler_factor = d;
  } else if (key == "straggler_confirmations") {
    ok = number(value, 1, 1000, false, d) && d == std::floor(d);
    if (ok) t.straggler_confirmations = static_cast<int>(d);
  } else if (key == "replay_budget") {
    ok = number(value, 0, 1, true, d);
    if (ok) t.replay_budget = d;
  } else if (key == "outsig_period") {
    ok = number(value, 0.1, 3600, false, d);
    if (ok) t.outsig_period_s = d;
  } else if (key == "learn") {
    ok = value == "on" || value == "off";
    if (ok) t.learn = value == "on";
  }
  if (!ok && why) *why = fmt::format("{}={}: expected {}", key, value.substr(0, 64), k->expected);
  return ok;
}

bool split_assignment(const std::string& arg, std::string& key, std::string& value, std::string* why) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) {
    if (why) *why = fmt::format("'{}': expected key=value (keys: {})", arg.substr(0, 64), tune_key_list());
    return false;
  }
  key = arg.substr(0, eq);
  value = arg.substr(eq + 1);
  return true;
}

std::string tunable_text(const Tunables& t, const std::string& key) {
  if (key == "stall_threshold") return fmt::format("{:g}", t.stall_threshold_s);
  if (key == "straggler_factor") return fmt::format("{:g}", t.straggler_factor);
  if (key == "straggler_confirmations") return std::to_string(t.straggler_confirmations);
  if (key == "replay_budget") return fmt::format("{:g}", t.replay_budget);
  if (key == "outsig_period") return fmt::format("{:g}", t.outsig_period_s);
  if (key == "learn") return t.learn ? "on" : "off";
  return "";
}

nlohmann::json tunables_json(const Tunables& t) {
  return {{"stall_threshold", t.stall_threshold_s}, {"straggler_factor", t.straggler_factor},
          {"straggler_confirmations", t.straggler_confirmations}, {"replay_budget", t.replay_budget},
          {"outsig_period", t.outsig_period_s}, {"learn", t.learn}, {"version", t.version}};
}

bool tunables_from_json(const nlohmann::json& j, Tunables& t, std::string* why) {
  if (!j.is_object()) {
    if (why) *why = "settings: expected an object";
    return false;
  }
  Tunables out;
  for (auto& k : kTuneKeys) {
    auto it = j.find(k.key);
    if (it == j.end()) {
      if (why) *why = fmt::format("settings: '{}' missing", k.key);
      return false;
    }
    std::string text = it->is_boolean() ? (it->get<bool>() ? "on" : "off")
                       : it->is_number() ? fmt::format("{}", it->get<double>())
                                         : std::string("?");
    if (!set_tunable(out, k.key, text, why)) return false;
  }
  auto v = j.find("version");
  if (v == j.end() || !v->is_number_unsigned()) {
    if (why) *why = "settings: 'version' must be a non-negative integer";
    return false;
  }
  out.version = v->get<std::uint64_t>();
  t = out;
  return true;
}

}  // namespace scout::common
