// scoutd configuration: one struct, filled from defaults, then environment,
// then the command line; validated once; printed by --print-config.
#pragma once

#include <stdexcept>

#include "common/options.hpp"
#include <string>
#include <vector>

namespace scout::scoutd {

using opts::ConfigError;

struct ScoutdConfig {
  std::string job_id;             // required, decimal
  std::string step_id = "0";
  int ranks = 0;                  // ranks in the training step, required
  bool simulate_nodes = false;    // scout-run: observer k owns a block of ranks
  std::string node_prefix = "n";  // simulated host names: n1, n2, ...
  bool slurm = false;             // companion step: node from SLURMD_NODENAME, ranks by host
  std::string node;               // this observer's host name (default: hostname)
  int first_rank = -1, last_rank = -1;  // explicit block (non-simulated)
  std::string ledger;             // SQLite ledger path
  std::string runtime_dir;        // job runtime dir (control sockets)
  double stall_threshold_s = common::kStallThreshold.def;
  double tick_s = 0.1;
  double round_period_s = common::kRoundPeriod.def;
  double round_timeout_s = common::kRoundTimeout.def;   // per tree level
  std::string step_collective;     // kind marking steps ("" = automatic)
  double straggler_absolute_s = 0.0005;
  double straggler_relative = 1.2;
  int straggler_confirmations = 3;
  // Replay (silent data corruption): cycles beside the job.
  bool replay = common::kReplay.def;
  double replay_interval_s = common::kReplayInterval.def;  // 0: on demand only
  double replay_budget = common::kReplayBudget.def;        // fraction of the node's CPU time
  int replay_reruns = 2;           // K confirmations of a dissent
  std::vector<int> replay_cores;   // empty: the CPUs scoutd may use
  std::vector<std::string> replay_recipes;  // empty: all
  std::string replay_sched = "idle";        // idle (SCHED_IDLE + nice 19) or normal
  double replay_timeout_s = 300;
  // Collective-output signatures: how often the deciding observer compares.
  double outsig_period_s = 5;
  // Checkpoint certification.
  std::string ckpt_dir;
  double ckpt_settle_s = 5;
  std::string ckpt_marker;
  // Federated telemetry outlier detection.
  bool learn = common::kLearn.def;
  // Stacks of stalled ranks (scout-stack), each within stack_budget_s.
  bool stacks = common::kStacks.def;
  double stack_budget_s = 3;
  std::string stack_helper;  // "" = the scout-stack beside scoutd
  double learn_window_s = 10;
  double learn_round_s = 60;
  int learn_warmup = 3;
  int learn_consecutive = 3;
  double learn_quantile = 0.995;
  double learn_margin = 1.5;
  int learn_seed = 1;
  std::string learn_aggregation = "personalised";  // learn::parse_aggregation names
  // GPU health from NVML (0: off).
  double gpu_health_interval_s = 10;
  bool print_config = false;
};

// Parses argv with scoutd's option table. Throws ConfigError naming the
// option and what was expected. Returns false when --help or --version was
// printed.
bool parse_scoutd_args(int argc, char** argv, ScoutdConfig& cfg);
void validate(const ScoutdConfig& cfg);
std::string print_config(const ScoutdConfig& cfg);

// --help, generated from the same table as the parser.
std::string help_text();

// Strict value parsers (common/options.hpp), under their old names.
using opts::parse_cpu_list;
using opts::parse_int;
using opts::parse_number;
using opts::parse_seconds;

}  // namespace scout::scoutd
