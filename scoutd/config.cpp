// scoutd configuration parsing and validation (see config.hpp).
#include "scoutd/config.hpp"

#include <getopt.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "libc3/rank_record.hpp"

namespace scout::scoutd {

double parse_seconds(const std::string& what, const std::string& value, double min, double max) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end == value.c_str() || *end != '\0' || errno != 0 || !std::isfinite(v))
    throw ConfigError(fmt::format("{}: '{}' is not a number; expected seconds, e.g. 10 or 2.5",
                                  what, value));
  if (v < min || v > max)
    throw ConfigError(fmt::format("{}: {} is out of range; expected {} to {} seconds", what, value,
                                  min, max));
  return v;
}

int parse_int(const std::string& what, const std::string& value, int min, int max) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || end == value.c_str() || *end != '\0' || errno != 0)
    throw ConfigError(fmt::format("{}: '{}' is not an integer; expected {} to {}", what, value,
                                  min, max));
  if (v < min || v > max)
    throw ConfigError(fmt::format("{}: {} is out of range; expected {} to {}", what, value, min, max));
  return static_cast<int>(v);
}

std::vector<int> parse_cpu_list(const std::string& what, const std::string& value) {
  std::vector<int> out;
  std::size_t p = 0;
  while (p <= value.size()) {
    auto e = value.find(',', p);
    std::string item = value.substr(p, e == std::string::npos ? std::string::npos : e - p);
    p = e == std::string::npos ? value.size() + 1 : e + 1;
    auto dash = item.find('-');
    try {
      if (dash == std::string::npos) {
        out.push_back(parse_int(what, item, 0, 4095));
      } else {
        int a = parse_int(what, item.substr(0, dash), 0, 4095), b = parse_int(what, item.substr(dash + 1), 0, 4095);
        if (a > b) throw ConfigError("");
        for (int i = a; i <= b; ++i) out.push_back(i);
      }
    } catch (const ConfigError&) {
      throw ConfigError(fmt::format("{}: '{}' is not a CPU list; expected e.g. 0,2-3", what, value));
    }
  }
  return out;
}

namespace {
constexpr const char* kUsage =
    "Usage: scoutd --job-id ID --ranks N [OPTIONS]\n"
    "The per-node scout observer; one per node, started as one MPI job\n"
    "(by scout-run or the Slurm plugin).\n\n"
    "  --job-id ID            job to observe (decimal)\n"
    "  --step ID              step of the job (default 0)\n"
    "  --ranks N              ranks in the observed step\n"
    "  --simulate-nodes       observer k of K owns the k-th block of ranks and\n"
    "                         is named <prefix><k+1> (scout-run)\n"
    "  --node-prefix P        simulated host name prefix (default n)\n"
    "  --slurm                Slurm companion step: observer k is on the k-th node of\n"
    "                         the step (SLURMD_NODENAME) and owns its block of ranks\n"
    "  --node NAME            this node's name (default: host name)\n"
    "  --first-rank R, --last-rank R   ranks observed here\n"
    "  --ledger PATH          SQLite ledger (default $SCOUT_LEDGER)\n"
    "  --runtime-dir DIR      job runtime directory for control sockets\n"
    "  --stall-threshold S    seconds without progress before a hang (default 10, min 1)\n"
    "  --tick S               record polling period (default 0.1)\n"
    "  --round-period S       consensus round period (default 0.5)\n"
    "  --round-timeout S      deadline per tree level in a round (default 1)\n"
    "  --step-collective K    collective kind that marks a training step, e.g.\n"
    "                         allreduce (default $SCOUT_STEP_COLLECTIVE, else automatic)\n"
    "  --straggler-abs S      straggler: seconds over the peer median (default 0.005)\n"
    "  --straggler-rel X      straggler: times the peer median (default 1.2)\n"
    "  --straggler-confirm K  straggler: confirmations before a verdict (default 3)\n"
    "  --replay on|off        replay cycles for silent data corruption (default on)\n"
    "  --replay-interval S    seconds between replay cycles (default 600; 0: only on\n"
    "                         demand: scoutctl replay, a confirmed compute straggler)\n"
    "  --replay-budget F      CPU budget: fraction of the node's CPU time (default 0.01)\n"
    "  --replay-reruns K      re-runs of a dissenting device before a verdict (default 2)\n"
    "  --replay-cores LIST    cores to replay on, e.g. 0,2-3 (default: all allowed)\n"
    "  --replay-recipes LIST  gemm_f64,gemm_f32,fma_chain,transcendental,int_bit,mem_march\n"
    "  --replay-sched P       idle (SCHED_IDLE, nice 19; default) or normal\n"
    "  --replay-timeout S     a node's cycle report is waited for this long (default 300)\n"
    "  --outsig-period S      compare collective-output signatures every S (default 5)\n"
    "  --ckpt-dir DIR         certify the checkpoints written to DIR\n"
    "  --ckpt-settle S        a checkpoint is complete when unchanged for S (default 5)\n"
    "  --ckpt-marker NAME     ... or when DIR/CKPT/NAME (or CKPT.NAME) exists\n"
    "  --learn on|off         federated telemetry outlier detection (default on)\n"
    "  --learn-window S       telemetry window (default 10)\n"
    "  --learn-round S        federated round period (default 60)\n"
    "  --learn-warmup R       rounds before windows are scored (default 3)\n"
    "  --learn-consecutive K  windows above the threshold before a verdict (default 3)\n"
    "  --learn-quantile Q     threshold quantile of the merged scores (default 0.995)\n"
    "  --learn-margin X       threshold = quantile x X (default 1.5)\n"
    "  --learn-seed N         model seed, the same on every node (default 1)\n"
    "  --print-config         print the effective configuration and exit\n"
    "  -h, --help             this help\n"
    "  -V, --version          version\n";
}  // namespace

bool parse_scoutd_args(int argc, char** argv, ScoutdConfig& cfg) {
  if (const char* l = std::getenv("SCOUT_LEDGER")) cfg.ledger = l;
  if (const char* k = std::getenv("SCOUT_STEP_COLLECTIVE")) cfg.step_collective = k;
  enum {
    kJob = 1000, kStep, kRanks, kSim, kPrefix, kNode, kFirst, kLast, kLedger, kRuntime, kStall,
    kTick, kPeriod, kTimeout, kPrint, kSlurm, kStepColl, kStrAbs, kStrRel, kStrConf,
    kReplay, kRInterval, kRBudget, kRReruns, kRCores, kRRecipes, kRSched, kRTimeout, kOutsig,
    kCkptDir, kCkptSettle, kCkptMarker, kLearn, kLWindow, kLRound, kLWarmup, kLConsec, kLQuant,
    kLMargin, kLSeed
  };
  static const option kOpts[] = {
      {"job-id", required_argument, nullptr, kJob},
      {"step", required_argument, nullptr, kStep},
      {"ranks", required_argument, nullptr, kRanks},
      {"simulate-nodes", no_argument, nullptr, kSim},
      {"slurm", no_argument, nullptr, kSlurm},
      {"node-prefix", required_argument, nullptr, kPrefix},
      {"node", required_argument, nullptr, kNode},
      {"first-rank", required_argument, nullptr, kFirst},
      {"last-rank", required_argument, nullptr, kLast},
      {"ledger", required_argument, nullptr, kLedger},
      {"runtime-dir", required_argument, nullptr, kRuntime},
      {"stall-threshold", required_argument, nullptr, kStall},
      {"tick", required_argument, nullptr, kTick},
      {"round-period", required_argument, nullptr, kPeriod},
      {"round-timeout", required_argument, nullptr, kTimeout},
      {"print-config", no_argument, nullptr, kPrint},
      {"step-collective", required_argument, nullptr, kStepColl},
      {"straggler-abs", required_argument, nullptr, kStrAbs},
      {"straggler-rel", required_argument, nullptr, kStrRel},
      {"straggler-confirm", required_argument, nullptr, kStrConf},
      {"replay", required_argument, nullptr, kReplay},
      {"replay-interval", required_argument, nullptr, kRInterval},
      {"replay-budget", required_argument, nullptr, kRBudget},
      {"replay-reruns", required_argument, nullptr, kRReruns},
      {"replay-cores", required_argument, nullptr, kRCores},
      {"replay-recipes", required_argument, nullptr, kRRecipes},
      {"replay-sched", required_argument, nullptr, kRSched},
      {"replay-timeout", required_argument, nullptr, kRTimeout},
      {"outsig-period", required_argument, nullptr, kOutsig},
      {"ckpt-dir", required_argument, nullptr, kCkptDir},
      {"ckpt-settle", required_argument, nullptr, kCkptSettle},
      {"ckpt-marker", required_argument, nullptr, kCkptMarker},
      {"learn", required_argument, nullptr, kLearn},
      {"learn-window", required_argument, nullptr, kLWindow},
      {"learn-round", required_argument, nullptr, kLRound},
      {"learn-warmup", required_argument, nullptr, kLWarmup},
      {"learn-consecutive", required_argument, nullptr, kLConsec},
      {"learn-quantile", required_argument, nullptr, kLQuant},
      {"learn-margin", required_argument, nullptr, kLMargin},
      {"learn-seed", required_argument, nullptr, kLSeed},
      {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, 'V'},
      {nullptr, 0, nullptr, 0}};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+hV", kOpts, nullptr)) != -1) {
    std::string v = optarg ? optarg : "";
    switch (c) {
      case kJob: cfg.job_id = v; break;
      case kStep: cfg.step_id = v; break;
      case kRanks: cfg.ranks = parse_int("--ranks", v, 1, 1 << 22); break;
      case kSim: cfg.simulate_nodes = true; break;
      case kSlurm: cfg.slurm = true; break;
      case kPrefix: cfg.node_prefix = v; break;
      case kNode: cfg.node = v; break;
      case kFirst: cfg.first_rank = parse_int("--first-rank", v, 0, 1 << 22); break;
      case kLast: cfg.last_rank = parse_int("--last-rank", v, 0, 1 << 22); break;
      case kLedger: cfg.ledger = v; break;
      case kRuntime: cfg.runtime_dir = v; break;
      case kStall: cfg.stall_threshold_s = parse_seconds("--stall-threshold", v, 1, 86400); break;
      case kTick: cfg.tick_s = parse_seconds("--tick", v, 0.01, 10); break;
      case kPeriod: cfg.round_period_s = parse_seconds("--round-period", v, 0.01, 60); break;
      case kTimeout: cfg.round_timeout_s = parse_seconds("--round-timeout", v, 0.05, 60); break;
      case kPrint: cfg.print_config = true; break;
      case kStepColl: cfg.step_collective = v; break;
      case kStrAbs: cfg.straggler_absolute_s = parse_seconds("--straggler-abs", v, 0, 3600); break;
      case kStrRel: cfg.straggler_relative = parse_seconds("--straggler-rel", v, 1, 1000); break;
      case kStrConf: cfg.straggler_confirmations = parse_int("--straggler-confirm", v, 1, 1000); break;
      case kReplay:
        if (v != "on" && v != "off") throw ConfigError(fmt::format("--replay: '{}'; expected on or off", v));
        cfg.replay = v == "on";
        break;
      case kRInterval: cfg.replay_interval_s = parse_seconds("--replay-interval", v, 0, 7 * 86400); break;
      case kRBudget: {
        cfg.replay_budget = parse_seconds("--replay-budget", v, 0, 1);
        if (cfg.replay_budget <= 0)
          throw ConfigError("--replay-budget: 0; expected a fraction above 0 and at most 1 (use --replay off)");
        break;
      }
      case kRReruns: cfg.replay_reruns = parse_int("--replay-reruns", v, 1, 100); break;
      case kRCores: cfg.replay_cores = parse_cpu_list("--replay-cores", v); break;
      case kRRecipes: {
        cfg.replay_recipes.clear();
        std::size_t p = 0;
        while (p <= v.size()) {
          auto e = v.find(',', p);
          cfg.replay_recipes.push_back(v.substr(p, e == std::string::npos ? std::string::npos : e - p));
          p = e == std::string::npos ? v.size() + 1 : e + 1;
        }
        break;
      }
      case kRSched:
        if (v != "idle" && v != "normal")
          throw ConfigError(fmt::format("--replay-sched: '{}'; expected idle or normal", v));
        cfg.replay_sched = v;
        break;
      case kRTimeout: cfg.replay_timeout_s = parse_seconds("--replay-timeout", v, 1, 86400); break;
      case kOutsig: cfg.outsig_period_s = parse_seconds("--outsig-period", v, 0.1, 3600); break;
      case kCkptDir: cfg.ckpt_dir = v; break;
      case kCkptSettle: cfg.ckpt_settle_s = parse_seconds("--ckpt-settle", v, 0, 86400); break;
      case kCkptMarker:
        if (v.empty() || v.find('/') != std::string::npos)
          throw ConfigError(fmt::format("--ckpt-marker: '{}'; expected a file name without '/'", v));
        cfg.ckpt_marker = v;
        break;
      case kLearn:
        if (v != "on" && v != "off") throw ConfigError(fmt::format("--learn: '{}'; expected on or off", v));
        cfg.learn = v == "on";
        break;
      case kLWindow: cfg.learn_window_s = parse_seconds("--learn-window", v, 0.1, 3600); break;
      case kLRound: cfg.learn_round_s = parse_seconds("--learn-round", v, 0.1, 86400); break;
      case kLWarmup: cfg.learn_warmup = parse_int("--learn-warmup", v, 1, 100000); break;
      case kLConsec: cfg.learn_consecutive = parse_int("--learn-consecutive", v, 1, 1000); break;
      case kLQuant: {
        cfg.learn_quantile = parse_seconds("--learn-quantile", v, 0.5, 1);
        break;
      }
      case kLMargin: cfg.learn_margin = parse_seconds("--learn-margin", v, 1, 1000); break;
      case kLSeed: cfg.learn_seed = parse_int("--learn-seed", v, 0, 1 << 30); break;
      case 'h': std::fputs(kUsage, stdout); return false;
      case 'V': std::printf("scoutd (scout) %s\n", PACKAGE_VERSION); return false;
      default: {
        std::string opt = optopt ? fmt::format("-{}", static_cast<char>(optopt))
                                 : std::string(argv[optind - 1]);
        throw ConfigError(fmt::format("unknown option or missing value: {} (see scoutd --help)", opt));
      }
    }
  }
  if (optind < argc)
    throw ConfigError(fmt::format("unexpected argument '{}' (see scoutd --help)", argv[optind]));
  return true;
}

void validate(const ScoutdConfig& cfg) {
  if (!c3::valid_job_id(cfg.job_id))
    throw ConfigError(fmt::format("--job-id: '{}' is not a job id; expected a decimal number",
                                  cfg.job_id));
  if (!c3::valid_step_id(cfg.step_id))
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
  return fmt::format(
      "job_id = {}\nstep = {}\nranks = {}\nslurm = {}\nsimulate_nodes = {}\nnode_prefix = {}\nnode = {}\n"
      "first_rank = {}\nlast_rank = {}\nledger = {}\nruntime_dir = {}\nstall_threshold = {}\n"
      "tick = {}\nround_period = {}\nround_timeout = {}\nstep_collective = {}\n"
      "straggler_abs = {}\nstraggler_rel = {}\nstraggler_confirm = {}\n"
      "replay = {}\nreplay_interval = {}\nreplay_budget = {}\nreplay_reruns = {}\nreplay_cores = {}\n"
      "replay_recipes = {}\nreplay_sched = {}\nreplay_timeout = {}\noutsig_period = {}\n"
      "ckpt_dir = {}\nckpt_settle = {}\nckpt_marker = {}\n"
      "learn = {}\nlearn_window = {}\nlearn_round = {}\nlearn_warmup = {}\nlearn_consecutive = {}\n"
      "learn_quantile = {}\nlearn_margin = {}\nlearn_seed = {}\n",
      c.job_id, c.step_id, c.ranks, c.slurm, c.simulate_nodes, c.node_prefix, c.node, c.first_rank,
      c.last_rank, c.ledger, c.runtime_dir, c.stall_threshold_s, c.tick_s, c.round_period_s,
      c.round_timeout_s, c.step_collective.empty() ? "auto" : c.step_collective,
      c.straggler_absolute_s, c.straggler_relative, c.straggler_confirmations, c.replay ? "on" : "off",
      c.replay_interval_s, c.replay_budget, c.replay_reruns,
      c.replay_cores.empty() ? std::string("all") : fmt::format("{}", fmt::join(c.replay_cores, ",")),
      c.replay_recipes.empty() ? std::string("all") : fmt::format("{}", fmt::join(c.replay_recipes, ",")),
      c.replay_sched, c.replay_timeout_s, c.outsig_period_s, c.ckpt_dir.empty() ? "-" : c.ckpt_dir,
      c.ckpt_settle_s, c.ckpt_marker.empty() ? "-" : c.ckpt_marker, c.learn ? "on" : "off", c.learn_window_s,
      c.learn_round_s, c.learn_warmup, c.learn_consecutive, c.learn_quantile, c.learn_margin, c.learn_seed);
}

}  // namespace scout::scoutd
