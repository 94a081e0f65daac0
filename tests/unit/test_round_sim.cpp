// The real consensus round (libc3 TreeRound) run by the deterministic
// simulator (sim/): many members in one process, a simulated network and a
// virtual clock. Faults at scale that 3 real processes cannot show: the root
// lost mid-round, a partition and its healing, cascading loss, slow members,
// message loss; and the same seed giving the same trace.
#include <doctest/doctest.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <set>

#include "sim/gather_model.hpp"
#include "sim/round_sim.hpp"

using namespace scout;
using sim::RoundRecord;
using sim::RoundSim;
using sim::RoundSimConfig;

namespace {
// scoutd's defaults: a round every 0.5 s after the last one ended, a
// deadline of 1 s per tree level and direction.
RoundSimConfig config(int n, std::uint64_t seed = 7) {
  RoundSimConfig c;
  c.members = n;
  c.period_s = 0.5;
  c.hop_timeout_s = 1.0;
  c.seed = seed;
  return c;
}

// The last round every live member completed: each decided the same,
// resting on `contributors` members, decided by `root`.
void settled(const RoundSim& s, std::uint64_t contributors, int root) {
  const int n = s.member(0).world_size();
  std::vector<const RoundRecord*> last(static_cast<std::size_t>(n), nullptr);
  for (const auto& r : s.records()) last[static_cast<std::size_t>(r.member)] = &r;
  for (int m = 0; m < n; ++m) {
    if (s.crashed(m)) continue;
    const RoundRecord* r = last[static_cast<std::size_t>(m)];
    REQUIRE_MESSAGE(r != nullptr, "member " << m << " completed no round");
    CHECK_MESSAGE(r->complete, "member " << m << " at " << r->started_s);
    CHECK_MESSAGE(r->contributors == contributors, "member " << m << " at " << r->started_s);
    CHECK_MESSAGE(r->decided_by == root, "member " << m << " at " << r->started_s);
    CHECK(r->alive == static_cast<int>(contributors));
  }
}
}  // namespace

TEST_CASE("healthy rounds at 4096 members: every member decides the same, every round, within the hop budget") {
  RoundSim s(config(4096));
  s.run_until(5.0);
  settled(s, 4096, 0);
  double worst = 0;
  std::size_t rounds = 0;
  for (const auto& r : s.records()) {
    worst = std::max(worst, r.seconds);
    CHECK(r.complete);
    CHECK(r.contributors == 4096);
    rounds += r.member == 0;
  }
  CHECK(worst < 0.01);  // far inside one hop: nobody waited for a deadline
  // Constant traffic per member: a few small messages per round, flat in N.
  std::uint64_t most = 0;
  for (int m = 0; m < 4096; ++m) most = std::max(most, s.network().bytes_sent(m));
  CHECK(most <= rounds * 3 * 48);
}

TEST_CASE("the same seed gives the same trace; another seed with message loss another one") {
  auto trace = [](std::uint64_t seed, double loss) {
    RoundSim s(config(256, seed));
    s.loss(loss);
    s.crash(17, 2.3);
    s.run_until(8.0);
    return s.trace_digest();
  };
  CHECK(trace(11, 0.01) == trace(11, 0.01));
  CHECK(trace(11, 0.01) != trace(12, 0.01));
}

TEST_CASE("the root lost mid-round: the survivors name it lost and the next root decides") {
  RoundSim s(config(64));
  s.run_until(2.0);
  // Mid-round: the members have started a round and wait on the root.
  double next = 0;
  for (const auto& r : s.records()) next = std::max(next, r.started_s + r.seconds);
  const double t_crash = next + 0.5 + 0.0002;
  s.crash(0, t_crash);
  s.run_until(12.0);
  // Held lost by every survivor two hops and a quarter after the crash (no
  // keep-alive wave came down; the root's children, at depth 1, conclude
  // first), not after the round's whole budget (hop * (6 + depth + 2) at 64
  // members).
  double by = 0;
  int holding = 0;
  for (const auto& r : s.records())
    for (int w : r.newly_lost)
      if (w == 0) {
        ++holding;
        by = std::max(by, r.started_s + r.seconds);
      }
  CHECK(holding == 63);
  CHECK(by - t_crash <= 2.25 + 0.01);
  for (int m = 1; m < 64; ++m) {
    const auto& a = s.member(m).alive();
    CHECK_FALSE(std::binary_search(a.begin(), a.end(), 0));
  }
  settled(s, 63, 1);
  for (const auto& r : s.records()) CHECK_FALSE(r.expelled);
}

TEST_CASE("a partition: the majority side decides, the minority decides nothing; both rejoin after the heal") {
  const int n = 64;
  RoundSim s(config(n));
  std::vector<int> side(n, 0);
  for (int m = 40; m < n; ++m) side[static_cast<std::size_t>(m)] = 1;  // 24 of 64 cut off
  s.partition(side, 2.1);
  s.heal(20.1);
  s.run_until(20.0);
  // While cut: the majority decides for its 40; a minority member may finish
  // a round (a root of a stale view, or its down), never decide one.
  bool majority_decided = false;
  for (const auto& r : s.records()) {
    if (r.started_s < 10 || r.started_s > 20) continue;
    if (r.member >= 40) CHECK(r.decided_by == -1);
    if (r.member < 40 && r.complete && r.contributors == 40) majority_decided = true;
    if (r.decided_by >= 0) CHECK(r.decided_by < 40);
  }
  CHECK(majority_decided);
  s.run_until(40.0);
  // After the heal every member is back: all 64 decide together.
  settled(s, 64, 0);
  // No decision twice: a round's decision comes from one root.
  std::map<std::uint64_t, std::set<int>> deciders;
  for (const auto& r : s.records())
    if (r.decided_by >= 0 && r.member == r.decided_by) deciders[r.round].insert(r.decided_by);
  for (const auto& [round, d] : deciders) CHECK_MESSAGE(d.size() == 1, "round " << round);
}

TEST_CASE("cascading loss of 10% of the members: the survivors keep deciding and agree on who is lost") {
  const int n = 200;
  RoundSim s(config(n));
  std::set<int> gone;
  for (int k = 0; k < 20; ++k) {
    const int m = 3 + 9 * k;  // interior members and leaves, one every 0.7 s
    gone.insert(m);
    s.crash(m, 2.0 + 0.7 * k);
  }
  // Survivors are expelled and taken back for a while after the last loss
  // (about 29 s here: docs/scale.md); by 45 s after it, all agree.
  s.run_until(60.0);
  settled(s, n - 20, 0);
  for (int m = 0; m < n; ++m) {
    if (gone.count(m)) continue;
    const auto l = s.member(m).lost();
    CHECK(std::set<int>(l.begin(), l.end()) == gone);
  }
}

TEST_CASE("1% slow members (10x latency): no member is lost when none failed") {
  const int n = 512;
  RoundSim s(config(n));
  for (int m = 5; m < n; m += 100) s.slow(m, 10.0);
  s.run_until(30.0);
  for (int m = 0; m < n; ++m) CHECK(s.member(m).lost().empty());
  settled(s, n, 0);
}

// Thawed, it runs a round of its old view: its parent tells it it is lost
// (else it would lose its view one parent per round, 30 rounds at 64).
TEST_CASE("a frozen member is declared lost, then asks back in and is taken back within 3 rounds") {
  RoundSim s(config(64));
  s.freeze(9, 2.0, 6.0);  // SIGSTOP for 6 s
  s.run_until(8.0);
  bool lost_once = false;
  for (const auto& r : s.records())
    for (int w : r.newly_lost) lost_once |= (w == 9);
  CHECK(lost_once);
  // Thawed at 8.0: back within 3 rounds of its own.
  s.run_until(8.0 + 3 * (0.5 + 3.0));
  settled(s, 64, 0);
}

// A round that follows at once (scoutd's gather after a trigger that found
// the books differ, as they do when a frozen observer returns): the members
// under the returning one send it their contribution to the next round
// before it has applied the message that takes it back. Kept, not dropped:
// none of them is declared lost (test 06b lost n4 under load this way).
// 16 members take 40 s under ASan, where `make check` runs the unit tests
// (rounds back to back for 40 virtual seconds): 4 and 8 there.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::initializer_list<int> kFrozenSizes = {4, 8};
#else
constexpr std::initializer_list<int> kFrozenSizes = {4, 8, 16};
#endif
TEST_CASE("a frozen member taken back while its children already began the next round loses none of them") {
  for (const int n : kFrozenSizes) {
    auto c = config(n);
    c.period_s = 0;  // the next round at once
    RoundSim s(c);
    s.freeze(1, 2.0, 20.0);
    s.sluggish(1, 22.0, 0.05);  // thawed on a loaded host: the two messages reach it in one look
    s.run_until(40.0);
    std::set<int> lost;  // by the others (the frozen one's stale view loses all of them for a while)
    for (const auto& r : s.records())
      if (r.member != 1)
        for (int w : r.newly_lost) lost.insert(w);
    CHECK_MESSAGE(s.member(1).early_contributions() > 0, n << " members: the case did not happen");
    CHECK_MESSAGE(lost == std::set<int>{1}, n << " members: lost " << lost.size());
    settled(s, static_cast<std::uint64_t>(n), 0);
  }
}

// scoutd's evidence gather as it is today (sim/gather_model.cpp: its JSON
// evidence, combine_gathers, the progress detector at the root), at 64
// members of 8 ranks: the stopped rank is named, and the root takes in the
// evidence of every rank but its own (the cost issue 35 part 2 removes);
// the stacks of every rank arrive merged: two classes, every rank counted,
// fewer bytes than the stacks of one member's ranks.
TEST_CASE("a gather through the tree: the root's detector names the stopped rank among 512") {
  std::vector<sim::GatherSeen> seen;
  std::uint64_t flat = 0;
  sim::GatherModelOptions go;
  go.ranks_per_member = 8;
  go.stopped_rank = 300;
  RoundSim s(config(64), sim::gather_model(go, &seen, &flat));
  s.run_until(0.4);
  REQUIRE(seen.size() == 1);
  CHECK(seen.front().named == std::vector<int>{300});
  go.stacks = false;
  const auto one = sim::gather_model(go, nullptr).up(0).size();
  CHECK(s.cost(0).bytes_in >= 63 * (one - 64));  // every other member's evidence, concatenated
  CHECK(seen.front().stack_classes == 2);
  CHECK(seen.front().stack_ranks == 512);
  CHECK(seen.front().stack_text.rfind("511 ranks in MPI_Allreduce <- exchange_gradients <- train_step <- main; "
                                      "rank 300 in clock_nanosleep", 0) == 0);
  CHECK(seen.front().stack_bytes * 8 < flat / 64);
}
