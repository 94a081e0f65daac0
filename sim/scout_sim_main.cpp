// scout-sim: the consensus round scoutd runs (libc3 TreeRound), run by N
// simulated members in one process over a simulated network and a virtual
// clock (sim/), for each N given. Three tables: the healthy round's latency
// and traffic, and how long the survivors take to hold a crashed member, a
// crashed root and a frozen member lost (and to take the frozen one back);
// one evidence gather of every rank; and scoutd's round engine on every
// member (sim/engine_sim): fault-to-verdict times, healthy traffic, false
// verdicts, the root's cost per gather. Deterministic: the same options and
// seed print the same numbers (but the host CPU and wall-clock columns).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/options.hpp"
#include "sim/engine_sim.hpp"
#include "sim/gather_model.hpp"
#include "sim/swarm.hpp"
#include "sim/round_sim.hpp"

using namespace scout;

namespace {

struct Row {
  int n = 0;
  double round_median_s = 0, round_max_s = 0;
  double bytes_per_member_round = 0, root_bytes_round = 0;
  double crash_detect_s = -1, root_crash_detect_s = -1, freeze_detect_s = -1, freeze_back_s = -1;
  double wall_s = 0;
};

// Seconds from `t` until every live member holds `who` lost (-1: never).
double time_lost(const sim::RoundSim& s, int who, double t) {
  double last = -1;
  int holding = 0, live = 0;
  for (int m = 0; m < s.member(0).world_size(); ++m) {
    if (s.crashed(m) || m == who) continue;
    ++live;
  }
  for (const auto& r : s.records())
    for (int w : r.newly_lost)
      if (w == who && r.member != who) {
        ++holding;
        last = std::max(last, r.started_s + r.seconds - t);
      }
  return holding >= live ? last : -1;
}

Row measure(int n, const sim::RoundSimConfig& base) {
  Row row;
  row.n = n;
  const auto w0 = std::chrono::steady_clock::now();
  auto cfg = base;
  cfg.members = n;
  {
    sim::RoundSim s(cfg);
    const int rounds = 10;
    s.run_until(rounds * cfg.period_s);
    std::vector<double> lat;
    for (const auto& r : s.records())
      if (r.root) lat.push_back(r.seconds);
    std::sort(lat.begin(), lat.end());
    if (!lat.empty()) {
      row.round_median_s = lat[lat.size() / 2];
      row.round_max_s = lat.back();
    }
    std::uint64_t total = 0;
    for (int m = 0; m < n; ++m) total += s.network().bytes_sent(m);
    row.bytes_per_member_round = static_cast<double>(total) / n / rounds;
    row.root_bytes_round = static_cast<double>(s.network().bytes_sent(0)) / rounds;
  }
  const double at = 3 * cfg.period_s + 0.0003;  // about when round 3 begins
  // Long enough for the slowest path: a root's children wait for its down
  // message hop * (tree height + depth + 2), then the next round notices.
  int height = 0;
  for (int k = n; k > 1; k /= 2) ++height;
  const double window = 5 * cfg.period_s + cfg.hop_timeout_s * (2 * height + 4);
  if (n >= 3) {
    sim::RoundSim s(cfg);
    s.crash(n - 1, at);
    s.run_until(at + window);
    row.crash_detect_s = time_lost(s, n - 1, at);
  }
  if (n >= 3) {
    sim::RoundSim s(cfg);
    s.crash(0, at);
    s.run_until(at + window);
    row.root_crash_detect_s = time_lost(s, 0, at);
  }
  if (n >= 3) {
    sim::RoundSim s(cfg);
    const int who = n / 2;
    const double frozen_s = window;  // longer than any deadline: the others go on without it
    s.freeze(who, at, frozen_s);
    s.run_until(at + frozen_s + window);
    row.freeze_detect_s = time_lost(s, who, at);
    for (const auto& r : s.records())
      if (r.member == 0 && r.started_s >= at + frozen_s && r.complete && r.alive == n) {
        row.freeze_back_s = r.started_s + r.seconds - (at + frozen_s);
        break;
      }
  }
  row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  return row;
}

struct GatherRow {
  int n = 0, ranks = 0;
  double root_bytes_in = 0, root_combine_s = 0, root_decide_s = 0, round_s = 0, wall_s = 0;
  std::uint64_t bytes_total = 0;
  std::string named;
  std::uint64_t stacks_before = 0;  // the ranks' stacks inside their evidence (the baseline)
  std::size_t stack_bytes = 0, stack_classes = 0, stack_ranks = 0;
};

// One evidence gather as scoutd does it today (sim/gather_model.cpp): every
// member's ranks' JSON evidence concatenated up the tree, parsed at the root
// and handed to the progress detector; one rank stopped.
GatherRow measure_gather(int n, int per, const sim::RoundSimConfig& base) {
  GatherRow row;
  row.n = n;
  row.ranks = n * per;
  const auto w0 = std::chrono::steady_clock::now();
  auto cfg = base;
  cfg.members = n;
  std::vector<sim::GatherSeen> seen;
  sim::GatherModelOptions go;
  go.ranks_per_member = per;
  go.stopped_rank = std::min(5, row.ranks - 1);
  sim::RoundSim s(cfg, sim::gather_model(go, &seen, &row.stacks_before));
  s.run_until(cfg.period_s * 0.9);  // the first round only
  row.root_bytes_in = static_cast<double>(s.cost(0).bytes_in);
  row.root_combine_s = s.cost(0).combine_s;
  row.root_decide_s = s.cost(0).decide_s;
  for (const auto& r : s.records())
    if (r.root) row.round_s = r.seconds;
  for (int m = 0; m < n; ++m) row.bytes_total += s.network().bytes_sent(m);
  if (!seen.empty()) {
    for (int r : seen.front().named) row.named += (row.named.empty() ? "" : ",") + std::to_string(r);
    row.stack_bytes = seen.front().stack_bytes;
    row.stack_classes = seen.front().stack_classes;
    row.stack_ranks = seen.front().stack_ranks;
  }
  if (row.named.empty()) row.named = "-";
  row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  return row;
}

// The seed swarm: one line per seed that broke an invariant (or missed its
// fault), then a summary; exit 1 when any did.
int run_swarm(int first, int n, double seconds, bool all, bool json) {
  int bad = 0;
  std::size_t checks = 0, verdicts = 0;
  const auto w0 = std::chrono::steady_clock::now();
  nlohmann::json failed = nlohmann::json::array();
  for (int seed = first; seed < first + n; ++seed) {
    const sim::SwarmRun r = sim::swarm_run(static_cast<std::uint64_t>(seed), seconds,
                                           all ? sim::SwarmFaults::kAll : sim::SwarmFaults::kCrashesAndSlowLinks);
    checks += r.checks;
    verdicts += r.verdicts;
    if (r.violations.empty() && r.fault_named) continue;
    ++bad;
    failed.push_back({{"seed", seed}, {"scenario", r.scenario}, {"violations", r.violations},
                      {"fault_named", r.fault_named}});
    if (!json) {
      std::printf("seed %d: %s\n", seed, r.scenario.c_str());
      for (auto& v : r.violations) std::printf("  %s\n", v.c_str());
      if (!r.fault_named) std::printf("  the job's fault was not named\n");
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  if (json)
    std::printf("%s\n", nlohmann::json{{"seeds", n}, {"first", first}, {"failed", failed}, {"checks", checks},
                                       {"verdicts", verdicts}, {"wall_s", wall}}.dump(2).c_str());
  else
    std::printf("%8s %8s %10s %10s %8s\n%8d %8d %10zu %10zu %8.1f\n", "seeds", "failed", "checks", "verdicts",
                "wall_s", n, bad, checks, verdicts, wall);
  return bad ? 1 : 0;
}

struct VerdictRow {
  int n = 0, ranks = 0;
  double stop_s = -1, crash_s = -1, straggler_s = -1;  // from the fault to the committed verdict
  double healthy_bytes_node_period = 0;                // bytes each node sends per period, healthy
  double healthy_s = 0;
  int false_verdicts = 0;
  double root_bytes_in = 0, root_cpu_ms = 0;           // the largest gather of the stop case
  double wall_s = 0;
};

// Runs `s` until a verdict of `kind` naming `rank` is committed (or `until`);
// the seconds from `at` to it, or -1.
double until_named(sim::EngineSim& s, const std::string& kind, int rank, double at, double until) {
  for (double t = at; t <= until; t += 0.25) {
    s.run_until(t);
    for (const auto& v : s.verdicts())
      if (v.kind == kind && v.ranks == std::vector<int>{rank}) return v.at_s - at;
  }
  return -1;
}

// scoutd's round engine (participants, detectors, decider) on every
// simulated node, with a synchronous job's evidence (sim/engine_sim.hpp).
VerdictRow measure_verdicts(int n, int per, double healthy_s, const sim::RoundSimConfig& base) {
  VerdictRow row;
  row.n = n;
  row.ranks = n * per;
  const auto w0 = std::chrono::steady_clock::now();
  auto config = [&] {
    sim::EngineSimConfig c;
    c.members = n;
    c.link = base.link;
    c.seed = base.seed;
    c.work.ranks_per_member = per;
    c.work.seed = base.seed;
    return c;
  };
  const double at = 10;
  const int victim = row.ranks * 3 / 5;  // a rank far from the root
  {
    auto c = config();
    sim::EngineSim s(c);
    s.run_until(healthy_s);
    row.healthy_s = healthy_s;
    row.false_verdicts = static_cast<int>(s.verdicts().size());
    std::uint64_t bytes = 0, periods = 0;
    for (int m = 0; m < n; ++m) {
      bytes += s.bytes_sent(m);
      periods += s.periods(m);
    }
    row.healthy_bytes_node_period = periods ? static_cast<double>(bytes) / static_cast<double>(periods) : 0;
  }
  {
    auto c = config();
    c.work.stopped_rank = victim;
    c.work.stop_at_s = at;
    sim::EngineSim s(c);
    row.stop_s = until_named(s, "stall", victim, at, at + c.scoutd.stall_threshold_s + 10);
    for (const auto& g : s.gathers()) {
      row.root_bytes_in = std::max(row.root_bytes_in, static_cast<double>(g.root_bytes_in));
      row.root_cpu_ms = std::max(row.root_cpu_ms, g.root_cpu_s * 1e3);
    }
  }
  {
    auto c = config();
    c.work.crashed_rank = victim;
    c.work.crash_at_s = at;
    sim::EngineSim s(c);
    row.crash_s = until_named(s, "crash", victim, at, at + 10);
  }
  {
    auto c = config();
    c.work.slow_rank = victim;
    c.work.slow_at_s = at;
    c.work.slow_factor = 2;
    sim::EngineSim s(c);
    row.straggler_s = until_named(s, "straggler", victim, at, at + 30);
  }
  row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  return row;
}

std::vector<int> parse_members(const std::string& v) {
  std::vector<int> out;
  std::stringstream ss(v);
  std::string part;
  while (std::getline(ss, part, ','))
    out.push_back(opts::parse_int("--members", part, 1, 100000));
  if (out.empty()) throw opts::ConfigError("--members: expected a comma-separated list of member counts");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string members = "8,64,512,4096,12500";
  sim::RoundSimConfig cfg;  // scoutd's defaults
  cfg.period_s = 0.5;
  cfg.hop_timeout_s = 1.0;
  double latency_us = cfg.link.latency_s * 1e6, bandwidth_gbps = cfg.link.bandwidth_Bps * 8 / 1e9;
  int seed = 1;
  bool json = false;
  int per = 8;
  double healthy_s = 600;
  std::string engine_members = "8,64,512,4096";
  int swarm = 0, swarm_first = 1;
  double swarm_s = 45;
  std::string swarm_faults = "all";
  opts::Table t("scout-sim", "scout-sim [--members N,N,...] [options]",
                "Runs scoutd's consensus round (libc3 TreeRound, the production code) on N simulated\n"
                "members over a simulated network and a virtual clock, for each N, and prints three\n"
                "tables: the healthy round's latency and traffic and the time to hold a crashed member,\n"
                "a crashed root and a frozen member lost; one evidence gather of every rank as scoutd\n"
                "does it; and scoutd's round engine (participants, detectors, decider) on every member\n"
                "with a synchronous job: the time from a stop, a crash and a 2x straggler to the\n"
                "committed verdict, healthy traffic, false verdicts and the root's cost per gather.\n"
                "The same options and seed give the same numbers (but the host's CPU and wall columns).");
  t.text("members", "N,N,...", members, "member (node) counts to simulate, each up to 100000");
  t.seconds("period", cfg.period_s, 0.01, 3600, "from the end of a member's round to its next (scoutd's --round-period)");
  t.seconds("hop-timeout", cfg.hop_timeout_s, 0.001, 60, "deadline per tree level and direction (scoutd's --round-timeout)");
  t.number("latency-us", "US", latency_us, 0, 1e7, "microseconds", "one-way latency of one hop");
  t.number("bandwidth-gbps", "GBPS", bandwidth_gbps, 0.001, 1e4, "Gbit/s", "each member's sending link");
  t.integer("seed", "N", seed, 0, 1 << 30, "seed of the simulated network (message loss)");
  t.integer("ranks-per-node", "N", per, 1, 1024, "ranks whose evidence each member gathers");
  t.text("engine-members", "N,N,...", engine_members,
         "member counts for the third table (scoutd's round engine on every member; 12500 takes minutes)");
  t.seconds("healthy", healthy_s, 1, 86400, "virtual seconds of healthy jittered work for false verdicts and traffic");
  t.integer("swarm", "N", swarm, 0, 1000000,
            "instead of the tables: N seeds of random job and scoutd faults, every run checked (sim/swarm.hpp)");
  t.integer("swarm-first", "SEED", swarm_first, 0, 1 << 30, "the swarm's first seed");
  t.seconds("swarm-seconds", swarm_s, 15, 3600, "virtual seconds of each swarm run");
  t.text("swarm-faults", "all|crashes", swarm_faults,
         "the scoutd faults a swarm run may draw: all, or crashes and slow links only");
  t.flag("json", json, "print the rows as JSON");
  try {
    if (t.parse(argc, argv) == opts::Table::Outcome::kPrinted) return 0;
    if (swarm_faults != "all" && swarm_faults != "crashes")
      throw opts::ConfigError("--swarm-faults: '" + swarm_faults + "'; expected 'all' or 'crashes'");
    if (swarm > 0) return run_swarm(swarm_first, swarm, swarm_s, swarm_faults == "all", json);
    cfg.link.latency_s = latency_us / 1e6;
    cfg.link.bandwidth_Bps = bandwidth_gbps * 1e9 / 8;
    cfg.seed = static_cast<std::uint64_t>(seed);
    auto ns = parse_members(members);
    std::vector<Row> rows;
    if (!json)
      std::printf("%8s %12s %12s %14s %12s %12s %12s %12s %12s %8s\n", "members", "round_med_ms", "round_max_ms",
                  "B/member/round", "root_B/round", "crash_s", "root_crash_s", "frozen_s", "back_s", "wall_s");
    for (int n : ns) {
      Row r = measure(n, cfg);
      rows.push_back(r);
      if (!json)
        std::printf("%8d %12.3f %12.3f %14.1f %12.1f %12.3f %12.3f %12.3f %12.3f %8.2f\n", r.n,
                    r.round_median_s * 1e3, r.round_max_s * 1e3, r.bytes_per_member_round, r.root_bytes_round,
                    r.crash_detect_s, r.root_crash_detect_s, r.freeze_detect_s, r.freeze_back_s, r.wall_s);
      std::fflush(stdout);
    }
    std::vector<GatherRow> grows;
    if (!json)
      std::printf("\n%8s %8s %14s %14s %12s %12s %12s %8s %12s %13s %7s %9s %8s\n", "members", "ranks",
                  "root_bytes_in", "all_bytes", "root_merge_ms", "root_decide_ms", "round_ms", "named", "stack_B",
                  "stack_B_flat", "classes", "in_class", "wall_s");
    for (int n : ns) {
      GatherRow g = measure_gather(n, per, cfg);
      grows.push_back(g);
      if (!json)
        std::printf("%8d %8d %14.0f %14llu %12.1f %12.1f %12.3f %8s %12zu %13llu %7zu %9zu %8.2f\n", g.n, g.ranks,
                    g.root_bytes_in, static_cast<unsigned long long>(g.bytes_total), g.root_combine_s * 1e3,
                    g.root_decide_s * 1e3, g.round_s * 1e3, g.named.c_str(), g.stack_bytes,
                    static_cast<unsigned long long>(g.stacks_before), g.stack_classes, g.stack_ranks, g.wall_s);
      std::fflush(stdout);
    }
    std::vector<VerdictRow> vrows;
    if (!json)
      std::printf("\n%8s %8s %8s %8s %11s %14s %9s %14s %12s %8s\n", "members", "ranks", "stop_s", "crash_s",
                  "straggler_s", "B/node/period", "false", "root_bytes_in", "root_cpu_ms", "wall_s");
    for (int n : parse_members(engine_members)) {
      VerdictRow v = measure_verdicts(n, per, healthy_s, cfg);
      vrows.push_back(v);
      if (!json)
        std::printf("%8d %8d %8.3f %8.3f %11.3f %14.1f %4d/%-4.0f %14.0f %12.1f %8.2f\n", v.n, v.ranks, v.stop_s,
                    v.crash_s, v.straggler_s, v.healthy_bytes_node_period, v.false_verdicts, v.healthy_s,
                    v.root_bytes_in, v.root_cpu_ms, v.wall_s);
      std::fflush(stdout);
    }
    if (json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& r : rows)
        out.push_back({{"members", r.n},
                       {"round_median_s", r.round_median_s},
                       {"round_max_s", r.round_max_s},
                       {"bytes_per_member_round", r.bytes_per_member_round},
                       {"root_bytes_round", r.root_bytes_round},
                       {"crash_detect_s", r.crash_detect_s},
                       {"root_crash_detect_s", r.root_crash_detect_s},
                       {"frozen_detect_s", r.freeze_detect_s},
                       {"frozen_back_s", r.freeze_back_s},
                       {"wall_s", r.wall_s}});
      nlohmann::json gathers = nlohmann::json::array();
      for (const auto& g : grows)
        gathers.push_back({{"members", g.n},
                           {"ranks", g.ranks},
                           {"root_bytes_in", g.root_bytes_in},
                           {"all_bytes", g.bytes_total},
                           {"root_merge_s", g.root_combine_s},
                           {"root_decide_s", g.root_decide_s},
                           {"round_s", g.round_s},
                           {"named", g.named},
                           {"stack_bytes", g.stack_bytes},
                           {"stack_bytes_flat", g.stacks_before},
                           {"stack_classes", g.stack_classes},
                           {"stack_ranks", g.stack_ranks},
                           {"wall_s", g.wall_s}});
      nlohmann::json verdicts = nlohmann::json::array();
      for (const auto& v : vrows)
        verdicts.push_back({{"members", v.n},
                            {"ranks", v.ranks},
                            {"stop_s", v.stop_s},
                            {"crash_s", v.crash_s},
                            {"straggler_s", v.straggler_s},
                            {"healthy_bytes_node_period", v.healthy_bytes_node_period},
                            {"healthy_s", v.healthy_s},
                            {"false_verdicts", v.false_verdicts},
                            {"root_bytes_in", v.root_bytes_in},
                            {"root_cpu_ms", v.root_cpu_ms},
                            {"wall_s", v.wall_s}});
      std::printf("%s\n",
                  nlohmann::json{{"rounds", out}, {"gathers", gathers}, {"verdicts", verdicts}}.dump(2).c_str());
    }
  } catch (const opts::ConfigError& e) {
    std::fprintf(stderr, "scout-sim: %s\n", e.what());
    return 2;
  }
  return 0;
}
