// Slurm node states and the drain convention (see slurm_nodes.hpp).
#include "common/slurm_nodes.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "common/spawn.hpp"
#include "common/untrusted_json.hpp"

namespace scout::common {

namespace {
std::string beside(const std::string& scontrol, const char* prog) {
  const auto slash = scontrol.find_last_of('/');
  return slash == std::string::npos ? std::string(prog) : scontrol.substr(0, slash + 1) + prog;
}
std::string shown(const std::string& s) {  // another tool's text in a message: bounded, printable
  std::string out;
  for (char c : s.substr(0, 200)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  return out;
}
std::string whose(const SlurmNode& n) {
  return fmt::format("'{}' (set by {}{})", shown(n.reason), n.reason_by.empty() ? "?" : shown(n.reason_by),
                     n.reason_at.empty() || n.reason_at == "Unknown" ? "" : " at " + shown(n.reason_at));
}
std::optional<SlurmNode> one(const std::string& scontrol, const std::string& node, double timeout_s,
                             std::string& why) {
  auto v = slurm_nodes(scontrol, node, timeout_s, &why);
  for (auto& n : v)
    if (n.name == node) return n;
  if (why.empty()) why = fmt::format("Slurm does not know node {}", node);
  return std::nullopt;
}
}  // namespace

std::optional<SlurmNode> parse_sinfo_line(const std::string& line) {
  std::size_t at[4];
  std::size_t pos = 0;
  for (auto& a : at) {
    a = line.find('|', pos);
    if (a == std::string::npos) return std::nullopt;
    pos = a + 1;
  }
  SlurmNode n;
  n.name = line.substr(0, at[0]);
  n.state = line.substr(at[0] + 1, at[1] - at[0] - 1);
  n.reason_by = line.substr(at[1] + 1, at[2] - at[1] - 1);
  n.reason_at = line.substr(at[2] + 1, at[3] - at[2] - 1);
  n.reason = line.substr(at[3] + 1);
  if (!valid_node_name(n.name) || n.state.empty() ||
      n.state.find_first_not_of("abcdefghijklmnopqrstuvwxyz_+*~#!%$@^-") != std::string::npos)
    return std::nullopt;
  if (n.reason == "none" || n.reason == "(null)") n.reason.clear();
  if (n.reason_by == "Unknown" || n.reason_by == "(null)") n.reason_by.clear();
  n.drain = n.state.find("drain") != std::string::npos;
  n.down = n.state.rfind("down", 0) == 0;
  n.reboot_pending = n.state.find_first_of("@^") != std::string::npos || n.state.find("reboot") != std::string::npos;
  return n;
}

std::vector<SlurmNode> slurm_nodes(const std::string& scontrol, const std::string& node, double timeout_s,
                                   std::string* why) {
  std::vector<SlurmNode> out;
  if (!node.empty() && !valid_node_name(node)) {
    if (why) *why = "not a node name";
    return out;
  }
  std::vector<std::string> argv{beside(scontrol, "sinfo"), "-h", "-N"};
  if (!node.empty()) argv.insert(argv.end(), {"-n", node});
  argv.insert(argv.end(), {"-o", "%N|%T|%u|%H|%E"});
  auto r = run_command(argv, timeout_s, std::size_t{16} << 20);
  if (!r.ok()) {
    if (why) *why = "sinfo: " + r.error;
    return out;
  }
  std::set<std::string> seen;
  std::size_t pos = 0;
  while (pos < r.out.size()) {
    auto nl = r.out.find('\n', pos);
    if (nl == std::string::npos) nl = r.out.size();
    auto n = parse_sinfo_line(r.out.substr(pos, nl - pos));
    pos = nl + 1;
    if (n && seen.insert(n->name).second) out.push_back(std::move(*n));
  }
  return out;
}

DrainOutcome drain_node(const std::string& scontrol, const std::string& node, const std::string& reason,
                        double timeout_s, std::string& detail) {
  std::string why;
  auto n = one(scontrol, node, timeout_s, why);
  if (!n) {
    detail = "cannot read the node's state, not drained over a reason it may hold: " + why;
    return DrainOutcome::kFailed;
  }
  if (n->other_reason()) {
    detail = fmt::format("left as it is ({}): another tool's reason {}", n->state, whose(*n));
    return DrainOutcome::kLeft;
  }
  const std::string r = reason.rfind(kScoutReasonPrefix, 0) == 0 ? reason : std::string("scout: ") + reason;
  auto u = run_command({scontrol, "update", "nodename=" + node, "state=drain", "reason=" + r}, timeout_s);
  if (!u.ok()) {
    detail = u.error;
    return DrainOutcome::kFailed;
  }
  detail.clear();
  return DrainOutcome::kDrained;
}

ResumeOutcome resume_node(const std::string& scontrol, const std::string& node, double timeout_s,
                          std::string& detail) {
  std::string why;
  auto n = one(scontrol, node, timeout_s, why);
  if (!n) {
    detail = "cannot read the node's state: " + why;
    return ResumeOutcome::kFailed;
  }
  // A pending reboot first: Slurm keeps scout's reason through it (with
  // " : reboot issued" added) and shows the node as rebooting, not drained.
  if (n->reboot_pending) {
    detail = fmt::format("{}: a reboot is pending ({}), left for it", n->state, whose(*n));
    return ResumeOutcome::kRebootPending;
  }
  if (!n->drain && !n->down) {
    detail = fmt::format("not drained ({})", n->state);
    return ResumeOutcome::kNotDrained;
  }
  if (!n->scout_reason()) {
    detail = n->reason.empty() ? fmt::format("{} without a reason: not scout's drain, left as it is", n->state)
                               : fmt::format("{} with another tool's reason {}: left as it is", n->state, whose(*n));
    return ResumeOutcome::kOtherReason;
  }
  auto u = run_command({scontrol, "update", "nodename=" + node, "state=resume"}, timeout_s);
  if (!u.ok()) {
    detail = u.error;
    return ResumeOutcome::kFailed;
  }
  detail.clear();
  return ResumeOutcome::kResumed;
}

}  // namespace scout::common
