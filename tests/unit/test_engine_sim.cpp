// scoutd's round engine (participants, detectors, decider, incident book)
// run by simulated scoutds over the simulated network (sim/engine_sim.hpp):
// the verdicts a user would read in the ledger, and when (virtual time).
#include <doctest/doctest.h>

#include <algorithm>

#include "sim/engine_sim.hpp"

using namespace scout::sim;

namespace {

EngineSimConfig config(int members) {
  EngineSimConfig c;
  c.members = members;
  c.work.ranks_per_member = 8;
  return c;
}

std::vector<SimVerdict> of_kind(const EngineSim& s, const std::string& kind) {
  std::vector<SimVerdict> out;
  for (auto& v : s.verdicts())
    if (v.kind == kind) out.push_back(v);
  return out;
}

}  // namespace

TEST_CASE("engine sim: 64 scoutds of a healthy jittered job for 2 virtual minutes commit no verdict") {
  EngineSim s(config(64));
  s.run_until(120);
  for (auto& v : s.verdicts()) MESSAGE(v.kind << " " << v.status << " " << v.key);
  CHECK(s.verdicts().empty());
  CHECK(s.periods(0) > 100);
  CHECK(s.periods(63) > 100);
}

TEST_CASE("engine sim: a rank stopped in a 512-rank job is named within the stall threshold and a second") {
  auto c = config(64);
  c.work.stopped_rank = 301;
  c.work.stop_at_s = 20;
  EngineSim s(c);
  s.run_until(40);
  auto named = of_kind(s, "stall");
  REQUIRE(named.size() == 1);
  CHECK(named[0].status == "attributed");
  CHECK(named[0].ranks == std::vector<int>{301});
  const double latency = named[0].at_s - c.work.stop_at_s;
  MESSAGE("stop named " << latency << " s after the stop");
  CHECK(latency >= c.scoutd.stall_threshold_s);
  CHECK(latency <= c.scoutd.stall_threshold_s + 1.0);
  CHECK(s.verdicts().size() == 1);  // nothing else, and once
}

TEST_CASE("engine sim: a crashed rank is named once, by the deciding observer") {
  auto c = config(64);
  c.work.crashed_rank = 77;
  c.work.crash_at_s = 10;
  EngineSim s(c);
  s.run_until(20);
  auto named = of_kind(s, "crash");
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{77});
  CHECK(named[0].by == 0);
  MESSAGE("crash named " << named[0].at_s - c.work.crash_at_s << " s after it");
  CHECK(named[0].at_s - c.work.crash_at_s < 2.0);
}

TEST_CASE("engine sim: a rank slowed 2x from 10 s is named a straggler after its confirmations, and only it") {
  auto c = config(64);
  c.work.slow_rank = 130;
  c.work.slow_at_s = 10;
  c.work.slow_factor = 2.0;
  EngineSim s(c);
  s.run_until(40);
  auto named = of_kind(s, "straggler");
  REQUIRE(!named.empty());
  CHECK(named[0].ranks == std::vector<int>{130});
  for (auto& v : s.verdicts()) CHECK(v.ranks == std::vector<int>{130});
  MESSAGE("straggler named " << named[0].at_s - c.work.slow_at_s << " s after it slowed");
}

TEST_CASE("engine sim: the root's scoutd lost, the next observer records it, decides and names a later stop") {
  auto c = config(16);
  c.work.stopped_rank = 45;  // observed by scoutd 5 (scoutd 0's ranks 0-7 are unobserved after the loss)
  c.work.stop_at_s = 15;
  EngineSim s(c);
  s.crash(0, 5);
  s.run_until(40);
  auto lost = of_kind(s, "observer_lost");
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].by != 0);
  auto named = of_kind(s, "stall");
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{45});
  CHECK(named[0].by != 0);
  CHECK(s.verdicts().size() == 2);
}

TEST_CASE("engine sim: the same seed gives the same trace; another seed another one") {
  auto c = config(32);
  c.work.stopped_rank = 40;
  c.work.stop_at_s = 8;
  EngineSim a(c), b(c);
  a.run_until(25);
  b.run_until(25);
  CHECK(a.trace_digest() == b.trace_digest());
  c.seed = 2;
  c.work.seed = 2;
  EngineSim d(c);
  d.run_until(25);
  CHECK(d.trace_digest() != a.trace_digest());
}
