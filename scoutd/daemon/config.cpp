// scoutd configuration parsing and validation (see config.hpp).
#include "scoutd/daemon/config.hpp"


#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/ids.hpp"
#include "learn/aggregation.hpp"
#include "common/options.hpp"
#include "libc3/rank_record.hpp"

namespace scout::scoutd {

namespace {

// The one table of scoutd's options: the parser, --help and --print-config.
opts::Table make_table(ScoutdConfig& c) {
  opts::Table t("scoutd", "scoutd --job-id ID --ranks N [OPTIONS]",
                "The per-node scout observer; one per node, started as one MPI job\n"
                "(by scout-run or the Slurm plugin).");
  t.text("job-id", "ID", c.job_id, "job to observe (decimal)", "job_id");
  t.text("step", "ID", c.step_id, "step of the job", "step");
  t.integer("ranks", "N", c.ranks, 1, 1 << 22, "ranks in the observed step (required)", "ranks");
  t.flag("simulate-nodes", c.simulate_nodes,
         "observer k of K owns the k-th block of ranks and\nis named <prefix><k+1> (scout-run)", "simulate_nodes");
  t.text("node-prefix", "P", c.node_prefix, "simulated host name prefix", "node_prefix");
  t.flag("slurm", c.slurm,
         "Slurm companion step: this node is SLURMD_NODENAME and\nobserves the ranks whose records name this host",
         "slurm");
  t.text("node", "NAME", c.node, "this node's name (default: host name)", "node");
  t.integer("first-rank", "R", c.first_rank, 0, 1 << 22, "first rank observed here, with --last-rank (default: none)",
            "first_rank");
  t.integer("last-rank", "R", c.last_rank, 0, 1 << 22, "last rank observed here (default: none)", "last_rank");
  t.text("ledger", "PATH", c.ledger, "SQLite ledger (default $SCOUT_LEDGER)", "ledger");
  t.text("runtime-dir", "DIR", c.runtime_dir, "job runtime directory for control sockets", "runtime_dir");
  t.setting(common::kStallThreshold, c.stall_threshold_s);
  t.seconds("tick", c.tick_s, 0.01, 10, "record polling period", "tick");
  t.setting(common::kRoundPeriod, c.round_period_s);
  t.setting(common::kRoundTimeout, c.round_timeout_s);
  t.add({"step-collective", 0, "K",
         "collective kind that marks a training step, e.g.\nallreduce (default $SCOUT_STEP_COLLECTIVE, else automatic)",
         "step_collective", [&c](const std::string& v) { c.step_collective = v; },
         [&c] { return c.step_collective.empty() ? std::string("auto") : c.step_collective; }});
  t.seconds("straggler-abs", c.straggler_absolute_s, 0, 3600, "straggler: floor of the guard over the peer median\n(the job's jitter sets it above)",
            "straggler_abs");
  t.number("straggler-rel", "X", c.straggler_relative, 1, 1000, "a factor of the peer median",
           "straggler: times the peer median", "straggler_rel");
  t.integer("straggler-confirm", "K", c.straggler_confirmations, 1, 1000,
            "straggler: confirmations before a verdict", "straggler_confirm");
  t.setting(common::kReplay, c.replay);
  t.setting(common::kReplayInterval, c.replay_interval_s);
  t.setting(common::kReplayBudget, c.replay_budget);
  t.integer("replay-reruns", "K", c.replay_reruns, 1, 100, "re-runs of a dissenting device before a verdict",
            "replay_reruns");
  t.add({"replay-cores", 0, "LIST", "cores to replay on, e.g. 0,2-3 (default: all allowed)", "replay_cores",
         [&c](const std::string& v) { c.replay_cores = opts::parse_cpu_list("--replay-cores", v); },
         [&c] { return c.replay_cores.empty() ? std::string("all") : fmt::format("{}", fmt::join(c.replay_cores, ",")); }});
  t.add({"replay-recipes", 0, "LIST", "gemm_f64,gemm_f32,fma_chain,transcendental,int_bit,mem_march\n(default: all)",
         "replay_recipes",
         [&c](const std::string& v) {
           c.replay_recipes.clear();
           std::size_t p = 0;
           while (p <= v.size()) {
             auto e = v.find(',', p);
             c.replay_recipes.push_back(v.substr(p, e == std::string::npos ? std::string::npos : e - p));
             p = e == std::string::npos ? v.size() + 1 : e + 1;
           }
         },
         [&c] { return c.replay_recipes.empty() ? std::string("all") : fmt::format("{}", fmt::join(c.replay_recipes, ",")); }});
  t.add({"replay-sched", 0, "P", "idle (SCHED_IDLE, nice 19) or normal", "replay_sched",
         [&c](const std::string& v) {
           if (v != "idle" && v != "normal")
             throw opts::ConfigError(fmt::format("--replay-sched: '{}'; expected idle or normal", v));
           c.replay_sched = v;
         },
         [&c] { return c.replay_sched; }});
  t.seconds("replay-timeout", c.replay_timeout_s, 1, 86400, "a node's cycle report is waited for this long",
            "replay_timeout");
  t.seconds("outsig-period", c.outsig_period_s, 0.1, 3600, "compare collective-output signatures every S",
            "outsig_period");
  t.text("ckpt-dir", "DIR", c.ckpt_dir, "certify the checkpoints written to DIR", "ckpt_dir");
  t.seconds("ckpt-settle", c.ckpt_settle_s, 0, 86400, "a checkpoint is complete when unchanged for S",
            "ckpt_settle");
  t.add({"ckpt-marker", 0, "NAME", "... or when DIR/CKPT/NAME (or CKPT.NAME) exists", "ckpt_marker",
         [&c](const std::string& v) {
           if (v.empty() || v.find('/') != std::string::npos)
             throw opts::ConfigError(fmt::format("--ckpt-marker: '{}'; expected a file name without '/'", v));
           c.ckpt_marker = v;
         },
         [&c] { return c.ckpt_marker; }});
  t.setting(common::kLearn, c.learn);
  t.setting(common::kStacks, c.stacks);
  t.seconds("stack-budget", c.stack_budget_s, 0.1, 60, "a rank's stack is given up after S", "stack_budget");
  t.text("stack-helper", "PATH", c.stack_helper, "the scout-stack program (default: beside scoutd)", "stack_helper");
  t.seconds("learn-window", c.learn_window_s, 0.1, 3600, "telemetry window", "learn_window");
  t.seconds("learn-round", c.learn_round_s, 0.1, 86400, "federated round period", "learn_round");
  t.integer("learn-warmup", "R", c.learn_warmup, 1, 100000, "rounds before windows are scored", "learn_warmup");
  t.integer("learn-consecutive", "K", c.learn_consecutive, 1, 1000, "windows above the threshold before a verdict",
            "learn_consecutive");
  t.number("learn-quantile", "Q", c.learn_quantile, 0.5, 1, "a quantile", "threshold quantile of the merged scores",
           "learn_quantile");
  t.number("learn-margin", "X", c.learn_margin, 1, 1000, "a factor of the quantile", "threshold = quantile x X",
           "learn_margin");
  t.integer("learn-seed", "N", c.learn_seed, 0, 1 << 30, "model seed, the same on every node", "learn_seed");
  t.add({"learn-aggregation", 0, "NAME",
         "federated aggregation: personalised (default), clustered, matched, fedadam, fedavgm or fedavg",
         "learn_aggregation",
         [&c](const std::string& v) {
           learn::Aggregation a;
           if (!learn::parse_aggregation(v, a))
             throw opts::ConfigError(fmt::format(
                 "--learn-aggregation: '{}'; expected {}", v, learn::kAggregationChoices));
           c.learn_aggregation = v;
         },
         [&c] { return c.learn_aggregation; }});
  t.seconds("gpu-health-interval", c.gpu_health_interval_s, 0, 86400,
            "read GPU health from NVML every S seconds (0: off)", "gpu_health_interval");
  t.flag("print-config", c.print_config, "print the effective configuration and exit");
  return t;
}

}  // namespace

bool parse_scoutd_args(int argc, char** argv, ScoutdConfig& cfg) {
  if (const char* l = std::getenv("SCOUT_LEDGER")) cfg.ledger = l;
  if (const char* k = std::getenv("SCOUT_STEP_COLLECTIVE")) cfg.step_collective = k;
  return make_table(cfg).parse(argc, argv) == opts::Table::Outcome::kRun;
}

void validate(const ScoutdConfig& cfg) {
  if (!common::valid_job_id(cfg.job_id))
    throw ConfigError(fmt::format("--job-id: '{}' is not a job id; expected a decimal number",
                                  cfg.job_id));
  if (!common::valid_step_id(cfg.step_id))
    throw ConfigError(fmt::format("--step: '{}' is not a step id; expected [0-9a-z_]", cfg.step_id));
  if (cfg.ranks <= 0) throw ConfigError("--ranks: required; expected the number of ranks (>= 1)");
  if (cfg.ledger.empty())
    throw ConfigError("--ledger: required (or set SCOUT_LEDGER); expected a path to an SQLite file");
  if (cfg.slurm && cfg.simulate_nodes)
    throw ConfigError("--slurm and --simulate-nodes: give one or the other");
  if (!cfg.simulate_nodes && (cfg.first_rank >= 0) != (cfg.last_rank >= 0))
    throw ConfigError("--first-rank and --last-rank: give both or neither");
  if (cfg.first_rank > cfg.last_rank)
    throw ConfigError("--first-rank: must not be greater than --last-rank");
  if (cfg.last_rank >= cfg.ranks)
    throw ConfigError(fmt::format("--last-rank: {} is outside the step's {} ranks", cfg.last_rank,
                                  cfg.ranks));
  if (!cfg.step_collective.empty()) {
    bool known = false;
    for (std::uint32_t k = 1; k < c3::kCollKindCount; ++k) known |= cfg.step_collective == c3::coll_name(k);
    if (!known)
      throw ConfigError(fmt::format("--step-collective: '{}' is not a collective; expected e.g. "
                                    "allreduce, bcast, allgather, barrier", cfg.step_collective));
  }
  static const char* kRecipes[] = {"gemm_f64", "gemm_f32", "fma_chain", "transcendental", "int_bit", "mem_march"};
  for (auto& r : cfg.replay_recipes) {
    bool known = false;
    for (auto* k : kRecipes) known |= r == k;
    if (!known)
      throw ConfigError(fmt::format("--replay-recipes: '{}' is not a recipe; expected gemm_f64, gemm_f32, "
                                    "fma_chain, transcendental, int_bit or mem_march", r));
  }
  if (cfg.node_prefix.empty() || cfg.node_prefix.size() > 32)
    throw ConfigError("--node-prefix: expected 1 to 32 characters");
}

std::string print_config(const ScoutdConfig& c) {
  ScoutdConfig copy = c;
  return make_table(copy).print_config();
}

std::string help_text() {
  ScoutdConfig defaults;
  return make_table(defaults).help();
}

}  // namespace scout::scoutd
