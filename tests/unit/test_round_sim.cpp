// The real consensus round (libc3 TreeRound) run by the deterministic
// simulator (sim/): many members in one process, a simulated network and a
// virtual clock. Faults at scale that 3 real processes cannot show: the root
// lost mid-round, a partition and its healing, cascading loss, slow members,
// message loss; and the same seed giving the same trace.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "sim/round_sim.hpp"

using namespace scout;
using sim::RoundRecord;
using sim::RoundSim;
using sim::RoundSimConfig;

namespace {
// The period holds the worst round: hop * (2 * tree height + 2) = 1.6 s at
// 200 members with 0.1 s hops. (A shorter period lets late rounds overlap
// and members lose each other: see scout-sim and docs/scale.md.)
constexpr double P = 2.0;

RoundSimConfig config(int n, std::uint64_t seed = 7) {
  RoundSimConfig c;
  c.members = n;
  c.period_s = P;
  c.hop_timeout_s = 0.1;
  c.seed = seed;
  return c;
}

// The records made in [from, to) seconds of virtual time.
std::vector<RoundRecord> between(const RoundSim& s, double from, double to) {
  std::vector<RoundRecord> out;
  for (const auto& r : s.records())
    if (r.started_s >= from && r.started_s < to) out.push_back(r);
  return out;
}

// Every live member completed the round that started in [from, to), each
// took the same decision, resting on `contributors` members.
void all_decided(const RoundSim& s, double from, double to, std::uint64_t contributors, int root) {
  auto rs = between(s, from, to);
  std::set<int> who;
  for (const auto& r : rs) {
    CHECK_MESSAGE(r.complete, "member " << r.member << " at " << r.started_s);
    CHECK(r.contributors == contributors);
    CHECK(r.decided_by == root);
    who.insert(r.member);
  }
  int live = 0;
  for (int m = 0; m < static_cast<int>(s.member(0).world_size()); ++m) live += s.crashed(m) ? 0 : 1;
  CHECK(static_cast<int>(who.size()) == live);
}
}  // namespace

TEST_CASE("healthy rounds at 4096 members: every member decides the same, every round, within the hop budget") {
  RoundSim s(config(4096));
  s.run_until(5 * P);
  for (int k = 0; k < 5; ++k) all_decided(s, k * P, k * P + 0.5, 4096, 0);
  double worst = 0;
  for (const auto& r : s.records()) worst = std::max(worst, r.seconds);
  CHECK(worst < 0.1);  // far inside one hop: nobody waited for a deadline
  // Constant traffic per member: no member sends more than a few small messages per round.
  std::uint64_t most = 0;
  for (int m = 0; m < 4096; ++m) most = std::max(most, s.network().bytes_sent(m));
  CHECK(most < 5 * 3 * 64);
}

TEST_CASE("the same seed gives the same trace; another seed with message loss another one") {
  auto trace = [](std::uint64_t seed, double loss) {
    RoundSim s(config(256, seed));
    s.loss(loss);
    s.crash(17, 2.3 * P);
    s.run_until(6 * P);
    return s.trace_digest();
  };
  CHECK(trace(11, 0.01) == trace(11, 0.01));
  CHECK(trace(11, 0.01) != trace(12, 0.01));
}

TEST_CASE("the root lost mid-round: the survivors name it lost and the next root decides") {
  RoundSim s(config(64));
  s.crash(0, 2 * P + 0.0005);  // during round 2, after the members began it
  s.run_until(8 * P);
  // Every survivor holds member 0 lost within two rounds, and from then on
  // member 1 decides for all 63.
  for (int m = 1; m < 64; ++m) CHECK_FALSE(std::binary_search(s.member(m).alive().begin(), s.member(m).alive().end(), 0));
  all_decided(s, 5 * P, 5 * P + 0.5, 63, 1);
  all_decided(s, 7 * P, 7 * P + 0.5, 63, 1);
  for (const auto& r : s.records()) CHECK_FALSE(r.expelled);
}

TEST_CASE("a partition: the majority side decides, the minority decides nothing; both rejoin after the heal") {
  const int n = 64;
  RoundSim s(config(n));
  std::vector<int> side(n, 0);
  for (int m = 40; m < n; ++m) side[static_cast<std::size_t>(m)] = 1;  // 24 of 64 cut off
  s.partition(side, 2.2 * P);
  s.heal(9.2 * P);
  s.run_until(16 * P);
  // While cut: the minority's members complete no round with a decision of
  // their own (any decision they hold came from before the cut or from the
  // majority after the heal), and the majority keeps deciding for its 40.
  for (const auto& r : between(s, 4 * P, 9 * P)) {
    if (r.member >= 40) {
      CHECK(r.decided_by == -1);  // a root of a stale view may finish a round, never decide it
    } else {
      CHECK(r.complete);
      CHECK(r.contributors == 40);
    }
  }
  // No round is decided twice: one decider per round start.
  std::map<double, std::set<int>> deciders;
  for (const auto& r : s.records())
    if (r.complete && r.decided_by >= 0) deciders[r.started_s].insert(r.decided_by);
  for (const auto& [t, d] : deciders) CHECK_MESSAGE(d.size() == 1, "round at " << t);
  // After the heal every member is back: all 64 decide together.
  all_decided(s, 14 * P, 14 * P + 0.5, 64, 0);
  for (int m = 0; m < n; ++m) CHECK(s.member(m).alive().size() == static_cast<std::size_t>(n));
}

TEST_CASE("cascading loss of 10% of the members: the survivors keep deciding and agree on who is lost") {
  const int n = 200;
  RoundSim s(config(n));
  std::set<int> gone;
  for (int k = 0; k < 20; ++k) {
    const int m = 3 + 9 * k;  // interior members and leaves, one every half round
    gone.insert(m);
    s.crash(m, (2.0 + 0.5 * k) * P + 0.0003);
  }
  s.run_until(18 * P);
  all_decided(s, 17 * P, 17 * P + 0.5, n - 20, 0);
  for (int m = 0; m < n; ++m) {
    if (gone.count(m)) continue;
    const auto l = s.member(m).lost();
    std::set<int> lost(l.begin(), l.end());
    CHECK(lost == gone);
  }
}

TEST_CASE("1% slow members (10x latency): no member is lost when none failed") {
  const int n = 512;
  RoundSim s(config(n));
  for (int m = 5; m < n; m += 100) s.slow(m, 10.0);
  s.run_until(30 * P);
  for (int m = 0; m < n; ++m) CHECK(s.member(m).lost().empty());
  all_decided(s, 29 * P, 29 * P + 0.5, n, 0);
}

// Thawed, it runs a round of its old view: its parent tells it it is lost
// (else it would lose its view one parent per round, 30 rounds at 64).
TEST_CASE("a frozen member is declared lost, then asks back in and is taken back within 3 rounds") {
  RoundSim s(config(64));
  s.freeze(9, 2 * P, 3 * P);  // SIGSTOP for 3 periods
  s.run_until(12 * P);
  bool lost_once = false;
  for (const auto& r : s.records())
    for (int w : r.newly_lost) lost_once |= (w == 9);
  CHECK(lost_once);
  all_decided(s, 8 * P, 8 * P + 0.5, 64, 0);  // thawed at 5 P
  all_decided(s, 11 * P, 11 * P + 0.5, 64, 0);
}
