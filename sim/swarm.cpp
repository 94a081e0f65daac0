// The seed swarm (see swarm.hpp).
#include "sim/swarm.hpp"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "sim/engine_sim.hpp"

namespace scout::sim {

SwarmRun swarm_run(std::uint64_t seed, double seconds, SwarmFaults faults) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + 1);
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto real = [&rng](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  SwarmRun run;
  run.seed = seed;
  EngineSimConfig c;
  c.members = pick(3, 16);
  c.seed = seed;
  c.work.seed = seed;
  c.work.ranks_per_member = pick(1, 8);
  const int ranks = c.members * c.work.ranks_per_member;
  const int fault = pick(0, 3);
  const int rank = pick(0, ranks - 1);
  const double at = real(5, 20);
  std::string s = fmt::format("{} scoutds x {} ranks", c.members, c.work.ranks_per_member);
  if (fault == 1) {
    c.work.stopped_rank = rank;
    c.work.stop_at_s = at;
    s += fmt::format("; rank {} stopped at {:.1f} s", rank, at);
  } else if (fault == 2) {
    c.work.crashed_rank = rank;
    c.work.crash_at_s = at;
    s += fmt::format("; rank {} crashed at {:.1f} s", rank, at);
  } else if (fault == 3) {
    c.work.slow_rank = rank;
    c.work.slow_at_s = at;
    c.work.slow_factor = real(1.5, 4);
    s += fmt::format("; rank {} slowed {:.2f}x at {:.1f} s", rank, c.work.slow_factor, at);
  } else {
    s += "; a healthy job";
  }
  EngineSim sim(c);
  const int scoutd_faults = pick(0, 4);
  std::vector<bool> crashed(static_cast<std::size_t>(c.members), false);
  int crashes = 0;
  for (int k = 0; k < scoutd_faults; ++k) {
    const int m = pick(0, c.members - 1);
    const double t = real(1, seconds - 10);
    int what = pick(0, 4);
    if (faults == SwarmFaults::kCrashesAndSlowLinks && what != 0) what = 3;
    switch (what) {
      case 0:
        if (!crashed[static_cast<std::size_t>(m)] && 2 * (crashes + 1) < c.members) {  // the others keep a majority
          sim.crash(m, t);
          crashed[static_cast<std::size_t>(m)] = true;
          ++crashes;
          s += fmt::format("; scoutd {} crashed at {:.1f} s", m, t);
        }
        break;
      case 1: {
        const double d = real(0.2, 8);
        sim.freeze(m, t, d);
        s += fmt::format("; scoutd {} frozen at {:.1f} s for {:.1f} s", m, t, d);
        break;
      }
      case 2: {
        std::vector<int> side(static_cast<std::size_t>(c.members), 0);
        const int draws = pick(1, std::max(1, (c.members - 1) / 2));
        for (int i = 0; i < draws; ++i) side[static_cast<std::size_t>(pick(0, c.members - 1))] = 1;
        const auto cut = std::count(side.begin(), side.end(), 1);
        const double d = real(1, 12);
        sim.partition(side, t);
        sim.heal(t + d);
        s += fmt::format("; {} scoutd(s) cut off at {:.1f} s for {:.1f} s", cut, t, d);
        break;
      }
      case 3: {
        const double f = real(2, 20);
        sim.slow(m, f);
        s += fmt::format("; scoutd {} on {:.0f}x slower links", m, f);
        break;
      }
      default: {
        const double p = real(0, 0.01);
        sim.loss(p);
        s += fmt::format("; {:.2f}% of messages lost", 100 * p);
        break;
      }
    }
  }
  sim.run_until(seconds);
  run.scenario = s;
  run.violations = sim.checker().violations();
  run.checks = sim.checker().checks();
  run.verdicts = sim.verdicts().size();
  if ((fault == 1 || fault == 2) && scoutd_faults == 0) {
    const std::string kind = fault == 1 ? "stall" : "crash";
    run.fault_named = std::any_of(sim.verdicts().begin(), sim.verdicts().end(), [&](const SimVerdict& v) {
      return v.kind == kind && v.ranks == std::vector<int>{rank};
    });
  }
  return run;
}

}  // namespace scout::sim
