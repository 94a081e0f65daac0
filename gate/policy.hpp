// Root's gating decision as a pure policy: the epilog's (drain this node
// after the job?) and the prolog's (refuse this node before the job?). The
// verdicts, the site's settings and root's own check results go in, a
// decision comes out; nothing here runs a program, opens a ledger or asks
// Slurm (spank/scout_epilog_main.cpp does, and applies the decision).
//
// A verdict is the job's user's word (docs/architecture.md, "Trust model"):
// root drains only on what it checked itself, by the evidence class of the
// verdict's kind (c3::evidence_class, one table):
//   reproduce  root re-runs what the verdict names (the replay recipe, core
//              and cycle), or, where it names nothing root can re-run, runs
//              its own node check; reproduced: drain and confirm, else keep
//              and record it unconfirmed;
//   suspect    root's node check failed: drain; else blame from at least
//              blame_jobs jobs of blame_users users in blame_window_days:
//              drain; else "suspect" (recorded, not drained).
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/verdict.hpp"

namespace scout::gate {

struct Settings {
  std::vector<std::string> drain_kinds = c3::default_drain_kinds();
  std::vector<std::string> prolog_kinds{"sdc"};
  int blame_jobs = 3;
  int blame_users = 2;
  double blame_window_days = 7;
  bool gate = true;      // gating on: drain (epilog) and refuse (prolog)
  bool dry_run = false;  // decide and record, drain nothing
};

// One check root ran and what it found.
struct CheckResult {
  std::string check;   // replay, d_state, kernel_log, gpu, reproduce
  std::string result;  // pass, fail, unavailable
  std::string detail;
};

// Root's node check as the policy reads it.
struct NodeCheckResult {
  bool failed = false;
  std::string failures;  // "replay: core 3 ...; kernel_log: ..."
  nlohmann::json detail = nlohmann::json::object();
};

struct Blame {
  int jobs = 0, users = 0;
};

// What a replay verdict names for root to re-run.
struct ReplayTarget {
  std::string recipe;
  int core = 0;
  long cycle = 0;
};
// nullopt: the evidence names no CPU recipe/core/cycle (collective outputs).
std::optional<ReplayTarget> replay_target(const nlohmann::json& evidence);

// Root's checks, asked only when the policy needs them, each at most once
// per decision (the node check takes seconds).
class RootChecks {
 public:
  virtual ~RootChecks() = default;
  virtual NodeCheckResult node_check() = 0;
  // result "fail": reproduced; "pass": not; "unavailable": root cannot re-run it.
  virtual CheckResult reproduce(const ReplayTarget& t) = 0;
  // Distinct jobs and users that blamed this node with `kinds` in the window.
  virtual Blame blame(const std::vector<std::string>& kinds) = 0;
};

enum class Action { kNone, kDrain };

struct Decision {
  std::string decision;  // keep, suspect, drain, refuse (the gating row's)
  std::string reason;    // the gating row's reason (why, in full)
  std::string node_reason;  // Slurm's node reason when drained (short, for sinfo)
  nlohmann::json evidence;  // null: none recorded
  // Root's check of each verdict by key: "confirmed" or "unconfirmed".
  std::vector<std::pair<std::string, std::string>> confirmations;
  Action action = Action::kNone;  // drain the node now
  bool would_act = false;         // it would have, with gating on and no dry run
};

// The epilog's decision on `node` after `job`, from the job's verdicts (any
// ledger's; only attributed ones of drain_kinds naming `node` count).
Decision decide_epilog(const std::vector<common::Verdict>& verdicts, const std::string& job, const std::string& node,
                       const Settings& s, RootChecks& checks);

// The prolog's decision on `node`: `open` are the verdicts still
// open against it that root confirmed there. Empty: admit (decision "").
Decision decide_prolog(const std::vector<common::Verdict>& open, const std::string& node, const Settings& s);

// The prolog's open verdicts: this node's ledger's (already confirmed
// there), plus the service's rows confirmed for `node`, of prolog_kinds,
// naming it, not already among them.
std::vector<common::Verdict> prolog_open(std::vector<common::Verdict> local, const std::vector<common::Verdict>& remote,
                                         const std::string& node, const Settings& s);

// The epilog's view of the job: its site ledger's rows, plus what other
// nodes forwarded to the service that has a key of this job, is not already
// here, and names only nodes of the allocation.
std::vector<common::Verdict> job_view(std::vector<common::Verdict> local, const std::vector<common::Verdict>& remote,
                                      const std::string& job, const std::set<std::string>& allocation);

}  // namespace scout::gate
