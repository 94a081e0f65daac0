// Late senders and receivers on a host where the ranks share cores (issue
// 36): lateness there is also the schedule's, so a late rank the scheduler
// favoured (it ran more than its node's other ranks) is not named: GROMACS's
// load balancing gives more atoms to the ranks the scheduler favours, and
// they are late while they run most. At its node's share or under, and on
// dedicated cores whatever its share, a late rank is named as before.
#include <doctest/doctest.h>

#include "scoutd/detect/late_sender.hpp"

using namespace scout::scoutd;

namespace {
// A 1-D periodic ring of 6 ranks, two per node; each window (1 s) every
// rank receives 100 messages from each neighbour. Receivers wait `late` per
// message for rank 3 and 0.2 ms for the others; each rank runs `cpu` of the
// window and is runnable on a run queue for `runq` of it.
struct SharedRing {
  static constexpr int kN = 6;
  std::vector<RankEvidence> ev;
  double now = 0;
  SharedRing() {
    for (int r = 0; r < kN; ++r) {
      RankEvidence e;
      e.rank = r;
      e.node = "n" + std::to_string(r / 2 + 1);
      e.pid = 100 + r;
      e.attached = true;
      e.cpu_ns = 0;
      e.runq_ns = 0;
      e.sched_at_ns = 1'000'000'000;
      ev.push_back(e);
    }
  }
  template <class Cpu>
  LateSenderTracker::Result window(LateSenderTracker& t, double late, Cpu cpu, double runq,
                                   const std::set<std::string>& open = {}) {
    for (int r = 0; r < kN; ++r) {
      for (int s : {(r + kN - 1) % kN, (r + 1) % kN}) {
        auto& p = ev[r].peers[s];
        p.recvd += 100;
        p.waits += 100;
        p.recvd_bytes += 100 * 128;
        p.wait_s += (s == 3 ? late : 0.2e-3) * 100;
      }
      ev[r].cpu_ns += static_cast<long long>(cpu(r) * 1e9);
      ev[r].runq_ns += static_cast<long long>(runq * 1e9);
      ev[r].sched_at_ns += 1'000'000'000;
    }
    now += 1.0;
    return t.update(ev, now, open);
  }
};
}  // namespace

TEST_CASE("shared cores: a late rank the scheduler favoured is not named; at its node's share it is") {
  SharedRing g;
  LateSenderTracker t;
  auto even = [](int) { return 0.45; };
  for (int w = 0; w < 6; ++w) CHECK(g.window(t, 0.2e-3, even, 0.5).verdicts.empty());
  // Rank 3 is late by 1.8 ms per message while the scheduler favours it
  // (0.6 of a CPU against 0.45 for rank 2, its node's other rank, both on
  // run queues half the time): late from its work, not slowed. Named by
  // nobody, for as long as it lasts.
  auto favoured = [](int r) { return r == 3 ? 0.6 : 0.45; };
  for (int w = 0; w < 8; ++w) {
    auto res = g.window(t, 2e-3, favoured, 0.5);
    CHECK(res.compared);
    CHECK(res.verdicts.empty());
    CHECK_FALSE(t.flagged(3));
  }
  // The same lateness at its node's share (a slower core, more work, a slow
  // link: ranks that spin or yield split the core evenly): named after K
  // windows, with the shares as its evidence.
  std::vector<VerdictDraft> named;
  for (int w = 0; w < 3; ++w)
    for (auto& d : g.window(t, 2e-3, even, 0.5).verdicts) named.push_back(d);
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{3});
  CHECK(named[0].evidence["cpu_share"].get<double>() == doctest::Approx(0.45));
  CHECK(named[0].evidence["others_cpu_share"].get<double>() == doctest::Approx(0.45));
  CHECK(named[0].evidence["others_runq_share"].get<double>() == doctest::Approx(0.5));
}

TEST_CASE("shared cores: a late rank that lost CPU is named") {
  SharedRing g;
  LateSenderTracker t;
  for (int w = 0; w < 6; ++w) CHECK(g.window(t, 0.2e-3, [](int) { return 0.45; }, 0.5).verdicts.empty());
  std::vector<VerdictDraft> named;
  for (int w = 0; w < 3; ++w)
    for (auto& d : g.window(t, 2e-3, [](int r) { return r == 3 ? 0.25 : 0.45; }, 0.5).verdicts) named.push_back(d);
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{3});
  CHECK(named[0].evidence["cpu_share"].get<double>() == doctest::Approx(0.25));
}

TEST_CASE("dedicated cores: a late rank is named however much more it runs than the others") {
  SharedRing g;
  LateSenderTracker t;
  for (int w = 0; w < 6; ++w) CHECK(g.window(t, 0.2e-3, [](int) { return 0.98; }, 0.01).verdicts.empty());
  // Rank 3 computes more (a slower core, more work) while the others sleep
  // in blocking waits for it: it runs far more than they do, and nobody
  // waits on a run queue. Named.
  std::vector<VerdictDraft> named;
  for (int w = 0; w < 3; ++w)
    for (auto& d : g.window(t, 2e-3, [](int r) { return r == 3 ? 1.0 : 0.6; }, 0.01).verdicts) named.push_back(d);
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{3});
  CHECK(named[0].evidence["cpu_share"].get<double>() == doctest::Approx(1.0));
  CHECK(named[0].evidence["others_runq_share"].get<double>() == doctest::Approx(0.01));
}

TEST_CASE("shares unknown (schedstat unreadable): the rule is as without them") {
  SharedRing g;
  for (auto& e : g.ev) e.cpu_ns = e.runq_ns = -1;
  LateSenderTracker t;
  auto none = [](int) { return 0.0; };  // adds nothing: the counters stay unreadable
  for (int w = 0; w < 6; ++w) CHECK(g.window(t, 0.2e-3, none, 0.0).verdicts.empty());
  std::vector<VerdictDraft> named;
  for (int w = 0; w < 3; ++w)
    for (auto& d : g.window(t, 2e-3, none, 0.0).verdicts) named.push_back(d);
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{3});
  CHECK(named[0].evidence["cpu_share"].is_null());
}
