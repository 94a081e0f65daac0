// Late senders and receivers on a host where the ranks share cores (issue
// 36): lateness there is also the schedule's, so a late rank is named only
// when it lost CPU against the others (its own evidence), never when it ran
// as much as they did or more (GROMACS's load balancing gives more atoms to
// the ranks the scheduler favours: they are late while they run most).
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

TEST_CASE("shared cores: a late rank that runs more than the others is not named; once it loses CPU it is") {
  SharedRing g;
  LateSenderTracker t;
  auto even = [](int) { return 0.45; };
  for (int w = 0; w < 6; ++w) CHECK(g.window(t, 0.2e-3, even, 0.5).verdicts.empty());
  // Rank 3 is late by 1.8 ms per message while the scheduler favours it
  // (0.6 of a CPU against the others' 0.45, all on run queues half the
  // time): its work, not a lost CPU. Named by nobody, for as long as it lasts.
  auto favoured = [](int r) { return r == 3 ? 0.6 : 0.45; };
  for (int w = 0; w < 8; ++w) {
    auto res = g.window(t, 2e-3, favoured, 0.5);
    CHECK(res.compared);
    CHECK(res.verdicts.empty());
    CHECK_FALSE(t.flagged(3));
  }
  // The same lateness with the CPU it lost (0.25 against 0.45: stopped,
  // throttled): named after K windows, with the shares as its evidence.
  auto lost = [](int r) { return r == 3 ? 0.25 : 0.45; };
  std::vector<VerdictDraft> named;
  for (int w = 0; w < 3; ++w)
    for (auto& d : g.window(t, 2e-3, lost, 0.5).verdicts) named.push_back(d);
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{3});
  CHECK(named[0].evidence["cpu_share"].get<double>() == doctest::Approx(0.25));
  CHECK(named[0].evidence["others_cpu_share"].get<double>() == doctest::Approx(0.45));
  CHECK(named[0].evidence["others_runq_share"].get<double>() == doctest::Approx(0.5));
}

TEST_CASE("dedicated cores: a late rank is named whatever its CPU share (busy-polling ranks all run)") {
  SharedRing g;
  LateSenderTracker t;
  auto all = [](int) { return 0.98; };
  for (int w = 0; w < 6; ++w) CHECK(g.window(t, 0.2e-3, all, 0.01).verdicts.empty());
  // Rank 3 computes more (a slower core, more work): its share is the
  // others' and nobody waits on a run queue. Named.
  std::vector<VerdictDraft> named;
  for (int w = 0; w < 3; ++w)
    for (auto& d : g.window(t, 2e-3, [](int r) { return r == 3 ? 1.0 : 0.98; }, 0.01).verdicts) named.push_back(d);
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{3});
  CHECK(named[0].evidence["cpu_share"].get<double>() == doctest::Approx(1.0));
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
