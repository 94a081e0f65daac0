// What Slurm says of a node's state and of who drained it, asked through
// fixed-format sinfo fields (`sinfo -h -N [-n NODE] -o %N|%T|%u|%H|%E`: name,
// state, the user who set the reason, when, and the reason itself last, so a
// reason holding "|" is read whole), and the drain convention scout shares
// with the site's other tools (NHC's node-mark-offline/node-mark-online):
// a node's reason says who drained it; scout drains only with a reason that
// starts "scout:", never replaces another tool's reason, and resumes only
// the nodes whose reason is its own and that wait for no reboot.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace scout::common {

inline constexpr const char* kScoutReasonPrefix = "scout:";

struct SlurmNode {
  std::string name;
  std::string state;            // as sinfo prints it (%T): idle, drained, draining@, down*, ...
  bool drain = false;           // drained or draining
  bool down = false;
  bool reboot_pending = false;  // a reboot was asked for (@) or issued (^)
  std::string reason;           // "" when none
  std::string reason_by;        // the user who set it
  std::string reason_at;        // when (Slurm's local time)
  // The reason is scout's own (it starts with "scout:").
  bool scout_reason() const { return reason.rfind(kScoutReasonPrefix, 0) == 0; }
  // Another tool (or an administrator) set a reason: scout leaves the node.
  bool other_reason() const { return !reason.empty() && !scout_reason(); }
};

// One line of the sinfo format above; nullopt for what is not one.
std::optional<SlurmNode> parse_sinfo_line(const std::string& line);
// Every node Slurm knows (`node` empty) or one node; each node once (sinfo
// lists a node once per partition). Empty, with why, when sinfo fails.
// `scontrol` may be a path: sinfo is looked up beside it.
std::vector<SlurmNode> slurm_nodes(const std::string& scontrol, const std::string& node, double timeout_s,
                                   std::string* why = nullptr);

// What scout does to a node it decided to drain.
enum class DrainOutcome { kDrained, kLeft, kFailed };
// Drains `node` with `reason` (given "scout: " first when it lacks it),
// unless Slurm holds another tool's reason for it: then the node is left as
// it is (kLeft; `detail` says whose reason). kFailed when Slurm cannot be
// asked or does not take the update (`detail` says why): a node whose
// reason cannot be read is not drained over it.
DrainOutcome drain_node(const std::string& scontrol, const std::string& node, const std::string& reason,
                        double timeout_s, std::string& detail);

// What scout does to a node whose verdicts were cleared.
enum class ResumeOutcome { kResumed, kNotDrained, kOtherReason, kRebootPending, kFailed };
// Resumes `node` only when scout drained it (its reason is scout's) and no
// reboot is pending; otherwise leaves it and says why in `detail`.
ResumeOutcome resume_node(const std::string& scontrol, const std::string& node, double timeout_s,
                          std::string& detail);

}  // namespace scout::common
