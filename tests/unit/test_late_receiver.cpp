// The late-sender rule (late receivers here) compares a rank with its own
// normal too: a rank the job's schedule makes late for the whole run is
// where it sits, not slow (the campaign's healthy GROMACS runs named such
// ranks), while the same rank slowed from that normal is named.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "scoutd/detect/late_sender.hpp"

using namespace scout::scoutd;

namespace {
// Three 2-stage pipelines (0->1, 2->3, 4->5) sending 256 KiB messages (a
// send waits for its receive), 100 messages a window (a 10 ms step): the
// receivers 1, 3 and 5 are one class. `late3` is what rank 2 waits in
// MPI_Send per message for rank 3, `own3` what rank 3 waits itself per
// message it receives.
struct Pipelines {
  std::vector<RankEvidence> ev;
  Pipelines() : ev(6) {
    for (int r = 0; r < 6; ++r) {
      ev[r].rank = r;
      ev[r].node = "n" + std::to_string(r / 2 + 1);
      ev[r].pid = 100 + r;
      ev[r].attached = true;
    }
  }
  void window(double late3, double own3) {
    const std::uint64_t msgs = 100;
    for (int a = 0; a < 6; a += 2) {
      auto& fwd = ev[a].peers[a + 1];
      fwd.sent += msgs;
      fwd.sent_bytes += msgs * 262144;
      fwd.send_wait_s += (a + 1 == 3 ? late3 : 0.1e-3) * static_cast<double>(msgs);
      auto& back = ev[a + 1].peers[a];
      back.recvd += msgs;
      back.recvd_bytes += msgs * 262144;
      back.waits += msgs;
      back.wait_s += (a + 1 == 3 ? own3 : 0.1e-3) * static_cast<double>(msgs);
    }
  }
};
}  // namespace

TEST_CASE("late receiver: late for the whole run (excused while it waited itself) is its normal; slowed from it, named") {
  Pipelines job;
  LateSenderTracker rx(LateSenderOptions{.receivers = true});
  double now = 0;
  std::vector<VerdictDraft> named;
  auto step = [&](double late3, double own3, const std::set<std::string>& open = {}) {
    job.window(late3, own3);
    now += 1.0;
    auto res = rx.update(job.ev, now, open);
    CHECK(res.compared);
    for (auto& d : res.verdicts) named.push_back(d);
  };
  for (int w = 0; w < 6; ++w) step(0.1e-3, 0.1e-3);  // healthy: every receiver prompt
  // Rank 3 late by 2.5-2.9 ms (a quarter of the step) for 20 windows, and
  // waiting itself 1 ms per message: excused each window, so nobody is named,
  // and, the job being quiet otherwise, that lateness becomes its normal.
  for (int w = 0; w < 20; ++w) step(w % 2 ? 2.9e-3 : 2.5e-3, 1e-3);
  CHECK(named.empty());
  // The same lateness with its own wait gone (its excuse with it): before,
  // named after three windows against a history of its first windows only;
  // now within its own spread of its own normal.
  for (int w = 0; w < 5; ++w) step(w % 2 ? 2.9e-3 : 2.5e-3, 0.1e-3);
  CHECK(named.empty());
  // Slowed from that normal (6 ms a message): named after three windows.
  for (int w = 0; w < 3; ++w) step(6e-3, 0.1e-3);
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{3});
  CHECK(named[0].evidence["source"] == "p2p_late_receiver");
  CHECK(named[0].evidence["own_median_late_s"].get<double>() == doctest::Approx(2.7e-3));
  CHECK(named[0].evidence["own_guard_s"].get<double>() > 0.1e-3);
}

TEST_CASE("late receiver: while a straggler's incident is open, others' excused lateness is not taken as their normal") {
  Pipelines job;
  LateSenderTracker rx(LateSenderOptions{.receivers = true});
  double now = 0;
  std::vector<VerdictDraft> named;
  auto step = [&](double late3, double own3, const std::set<std::string>& open) {
    job.window(late3, own3);
    now += 1.0;
    for (auto& d : rx.update(job.ev, now, open).verdicts) named.push_back(d);
  };
  for (int w = 0; w < 6; ++w) step(0.1e-3, 0.1e-3, {});
  // Another rank's straggler incident is open (a compute straggler named by
  // another rule): rank 3's excused lateness is that one's delay passed on,
  // and stays out of its history ...
  const std::set<std::string> other = {"straggler:compute:0"};
  for (int w = 0; w < 20; ++w) step(w % 2 ? 2.9e-3 : 2.5e-3, 1e-3, other);
  CHECK(named.empty());
  // ... so when rank 3 itself is late with no excuse, it is named.
  for (int w = 0; w < 3; ++w) step(w % 2 ? 2.9e-3 : 2.5e-3, 0.1e-3, {});
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{3});
}

