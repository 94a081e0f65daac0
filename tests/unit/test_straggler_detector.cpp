// Compute straggler consensus: a recurring slow rank is named with its score
// after K confirmations; a one-off or a jittery healthy job is not; a rank
// that recovers is resolved.
#include <doctest/doctest.h>

#include <random>

#include "scoutd/detect/late_sender.hpp"
#include "scoutd/detect/straggler_detector.hpp"

using namespace scout::scoutd;
namespace c3 = scout::c3;

namespace {
std::vector<RankEvidence> ranks(int n, int steps, double compute_s) {
  std::vector<RankEvidence> v;
  for (int r = 0; r < n; ++r) {
    RankEvidence e;
    e.rank = r;
    e.node = "n" + std::to_string(r / 2 + 1);
    e.pid = 100 + r;
    e.attached = true;
    e.steps = steps;
    e.compute_s = compute_s;
    e.wait_s = 0.001;
    e.step_s = compute_s + 0.001;
    v.push_back(e);
  }
  return v;
}
}  // namespace

TEST_CASE("a slow rank is named after three confirmations with new steps, with its score") {
  StragglerTracker t;
  std::set<std::string> open;
  StragglerTracker::Result r;
  for (int round = 1; round <= 3; ++round) {
    auto v = ranks(8, 10 * round, 0.002);
    v[3].compute_s = 0.052;
    r = t.update(v, open);
    if (round < 3) CHECK(r.verdicts.empty());
  }
  REQUIRE(r.verdicts.size() == 1);
  auto& d = r.verdicts[0];
  CHECK(d.kind == c3::VerdictKind::kStraggler);
  CHECK(d.ranks == std::vector<int>{3});
  CHECK(d.hosts == std::vector<std::string>{"n2"});
  CHECK(d.evidence["culprits"][0]["score"].get<double>() == doctest::Approx(26.0));
  CHECK(d.evidence["confirmations"] == 3);
  CHECK(d.evidence["scores"]["3"].get<double>() == doctest::Approx(26.0));
}

TEST_CASE("one slow rank is one incident: not while another rule's straggler incident of the rank is open") {
  StragglerTracker t;
  const std::set<std::string> open = {LateSenderTracker::key_for(3)};  // the change point's, or a late sender's
  for (int round = 1; round <= 5; ++round) {
    auto v = ranks(8, 10 * round, 0.002);
    v[3].compute_s = 0.052;
    CHECK(t.update(v, open).verdicts.empty());
  }
}

TEST_CASE("without new steps a gather does not confirm") {
  StragglerTracker t;
  auto v = ranks(8, 10, 0.002);
  v[3].compute_s = 0.052;
  for (int i = 0; i < 5; ++i) CHECK(t.update(v, {}).verdicts.empty());
}

TEST_CASE("a one-off does not confirm; jitter of +-20% never triggers") {
  StragglerTracker t;
  auto v = ranks(8, 10, 0.002);
  v[5].compute_s = 0.060;
  CHECK(t.update(v, {}).verdicts.empty());
  CHECK(t.update(ranks(8, 20, 0.002), {}).verdicts.empty());  // back to normal: reset
  v = ranks(8, 30, 0.002);
  v[5].compute_s = 0.060;
  CHECK(t.update(v, {}).verdicts.empty());
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> jit(0.8, 1.2);
  StragglerTracker h;
  for (int round = 1; round <= 500; ++round) {
    auto w = ranks(64, round, 0.02);
    for (auto& e : w) e.compute_s *= jit(rng);
    CHECK(h.update(w, {}).verdicts.empty());
  }
}

TEST_CASE("a confirmed straggler that recovers is resolved after K healthy gathers") {
  StragglerTracker t;
  std::set<std::string> open = {StragglerTracker::key_for(3)};
  for (int i = 1; i <= 2; ++i) CHECK(t.update(ranks(8, 10 * i, 0.002), open).resolved.empty());
  auto r = t.update(ranks(8, 30, 0.002), open);
  CHECK(r.resolved == std::vector<std::string>{StragglerTracker::key_for(3)});
}

TEST_CASE("two ranks are not enough to name one") {
  StragglerTracker t;
  auto v = ranks(2, 10, 0.002);
  v[1].compute_s = 1.0;
  for (int i = 1; i <= 5; ++i) {
    v[0].steps = v[1].steps = 10 * i;
    CHECK(t.update(v, {}).verdicts.empty());
  }
}

namespace {
// A 3x3 grid: rows R0..R2 and columns C0..C2 as communicators.
std::vector<RankEvidence> grid(double row_wait[3], double col_wait[3]) {
  std::vector<RankEvidence> v;
  for (int r = 0; r < 9; ++r) {
    RankEvidence e;
    e.rank = r;
    e.node = "n" + std::to_string(r + 1);
    e.attached = true;
    e.comm_wait[0x100 + static_cast<std::uint64_t>(r / 3)] = row_wait[r / 3];
    e.comm_wait[0x200 + static_cast<std::uint64_t>(r % 3)] = col_wait[r % 3];
    v.push_back(e);
  }
  return v;
}
}  // namespace

TEST_CASE("a slow row and a slow column meet at one rank: its host is attributed") {
  double rows[3] = {0.001, 0.031, 0.001}, cols[3] = {0.030, 0.030, 0.061};
  CommTracker t;
  CommTracker::Result r;
  for (int i = 0; i < 3; ++i) r = t.update(grid(rows, cols), {});
  REQUIRE(r.verdicts.size() == 1);
  CHECK(r.verdicts[0].status == c3::VerdictStatus::kAttributed);
  CHECK(r.verdicts[0].ranks == std::vector<int>{5});  // row 1, column 2
  CHECK(r.verdicts[0].hosts == std::vector<std::string>{"n6"});
  CHECK(r.verdicts[0].evidence["type"] == "communication");
}

TEST_CASE("a slow row alone does not single out a rank: inconclusive") {
  double rows[3] = {0.001, 0.031, 0.001}, cols[3] = {0.030, 0.030, 0.030};
  CommTracker t;
  CommTracker::Result r;
  for (int i = 0; i < 3; ++i) r = t.update(grid(rows, cols), {});
  REQUIRE(r.verdicts.size() == 1);
  CHECK(r.verdicts[0].status == c3::VerdictStatus::kInconclusive);
  CHECK(r.verdicts[0].ranks.empty());
  CHECK(r.verdicts[0].evidence["common_ranks"].size() == 3);
}

TEST_CASE("a communicator burst is not a straggler: above by less than its own spread, or confirmed within a second") {
  double rows[3] = {0.001, 0.0017, 0.001}, cols[3] = {0.002, 0.002, 0.002};
  auto v = grid(rows, cols);
  for (auto& e : v)
    for (auto& [c, w] : e.comm_wait) e.comm_jitter[c] = 0.0001;
  for (int r = 3; r < 6; ++r) v[static_cast<std::size_t>(r)].comm_jitter[0x101] = 0.0005;  // row 1 varies as much
  CommTracker bursty;
  for (int i = 0; i < 5; ++i) CHECK(bursty.update(v, {}, i * 2.0).verdicts.empty());
  for (int r = 3; r < 6; ++r) v[static_cast<std::size_t>(r)].comm_jitter[0x101] = 0.0001;  // steadily slow
  CommTracker quick;
  for (int i = 0; i < 5; ++i) CHECK(quick.update(v, {}, 10.0 + i * 0.2).verdicts.empty());  // within a second
  CommTracker spaced;
  CommTracker::Result r;
  for (int i = 0; i < 3; ++i) r = spaced.update(v, {}, 10.0 + i * 1.0);
  REQUIRE(r.verdicts.size() == 1);
  CHECK(r.verdicts[0].evidence["confirmations"] == 3);
}

TEST_CASE("healthy communicators give nothing") {
  double rows[3] = {0.001, 0.0012, 0.001}, cols[3] = {0.002, 0.002, 0.0021};
  CommTracker t;
  for (int i = 0; i < 5; ++i) CHECK(t.update(grid(rows, cols), {}).verdicts.empty());
}

// --- late senders (point-to-point) ------------------------------------------
#include "scoutd/detect/late_sender.hpp"

namespace {
// A 1-D periodic ring of n ranks, each receiving `msgs` messages per window
// from each neighbour; `late[s]` is the mean wait per message its receivers
// have for s, `own[r]` what r itself waits per message.
struct Ring {
  int n;
  std::vector<RankEvidence> ev;
  explicit Ring(int n_) : n(n_) {
    for (int r = 0; r < n; ++r) {
      RankEvidence e;
      e.rank = r;
      e.node = "n" + std::to_string(r / 2 + 1);
      e.pid = 100 + r;
      e.attached = true;
      ev.push_back(e);
    }
  }
  // One window: receiver r waits `wait(r, s)` per message from s.
  template <class F>
  void window(std::uint64_t msgs, F wait) {
    for (int r = 0; r < n; ++r)
      for (int s : {(r + n - 1) % n, (r + 1) % n}) {
        auto& p = ev[r].peers[s];
        p.recvd += msgs;
        p.waits += msgs;  // every message timed
        p.recvd_bytes += msgs * 128;
        p.wait_s += wait(r, s) * static_cast<double>(msgs);
      }
  }
};
}  // namespace

TEST_CASE("late sender: the slow rank is named after K windows, not the neighbours it delays; resolved after") {
  Ring g(6);
  LateSenderTracker t;
  // Rank 3 computes 2 ms more per 10 ms step: its receivers (2 and 4) wait
  // 2 ms for it; the delay propagates (2 and 4 are late by 1 ms for 1 and 5),
  // but 2 and 4 wait themselves, rank 3 does not.
  auto slow = [](int r, int s) {
    if (s == 3) return 2e-3;
    if ((s == 2 || s == 4) && r != 3) return 1e-3;
    if (r == 3) return 0.0;
    return 0.2e-3;
  };
  double now = 0;
  std::vector<VerdictDraft> named;
  for (int w = 0; w < 3; ++w) {
    g.window(100, slow);
    now += 1.0;  // 100 messages per receiver per second: a 10 ms step
    auto res = t.update(g.ev, now, {});
    CHECK(res.compared);
    for (auto& d : res.verdicts) named.push_back(d);
  }
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{3});
  CHECK(named[0].evidence["source"] == "p2p_late_sender");
  CHECK(named[0].evidence["culprits"][0]["late_s"].get<double>() == doctest::Approx(2e-3));
  CHECK(named[0].evidence["waited_by"].size() == 2);
  CHECK(named[0].key == LateSenderTracker::key_for(3));
  // Late still, but waiting itself (as every rank does now and then on a
  // loaded host): excused, so not named again, and not a clean window
  // either: its incident stays open (CI: a late receiver's resolved within
  // seconds while it was still slow).
  std::set<std::string> open = {LateSenderTracker::key_for(3)};
  for (int w = 0; w < 4; ++w) {
    g.window(100, [&](int r, int s) { return r == 3 ? 3e-3 : slow(r, s); });
    now += 1.0;
    auto res = t.update(g.ev, now, open);
    CHECK(res.verdicts.empty());
    CHECK(res.resolved.empty());
  }
  // Recovered: three healthy windows resolve it.
  std::vector<std::string> resolved;
  for (int w = 0; w < 3; ++w) {
    g.window(100, [](int, int) { return 0.2e-3; });
    now += 1.0;
    auto res = t.update(g.ev, now, open);
    CHECK(res.verdicts.empty());
    for (auto& k : res.resolved) resolved.push_back(k);
  }
  CHECK(resolved == std::vector<std::string>{LateSenderTracker::key_for(3)});
}

// A 3 x 2 periodic halo (MPI_Cart_create of 6 ranks, rank = 2 row + col):
// each step a rank gets one message from each row neighbour ((r + 2) % 6,
// (r + 4) % 6) and two from its column neighbour (r ^ 1, on both sides).
// Rank 5's sends are held: 1 and 3 wait W for it, 4 waits W per step on its
// two messages (the probe charges a wait to one of them: W / 2 per message);
// 4 then sends late to 0 and 2 (1.2 W: the scheduler's noise on top). Its
// mean wait per message is a quarter of W (diluted by three prompt
// messages), below half of what it makes 0 and 2 wait: only its wait for
// the late rank 5 shows that it passes the delay on.
TEST_CASE("late sender: the straggler's neighbour that waits for it on one link of four is not named") {
  const double W = 4e-3, base = 0.1e-3;
  std::vector<RankEvidence> ev(6);
  auto wait = [&](int r, int s) {
    if (r == 5) return 0.0;                    // the straggler never waits
    if (s == 5) return r == 4 ? W / 2 : W;     // its receivers wait for it
    if (s == 4 && r != 5) return 1.2 * W;      // 4 sends late to 0 and 2
    return base;
  };
  LateSenderTracker t;
  std::vector<VerdictDraft> named;
  double now = 0;
  for (int w = 0; w < 3; ++w) {
    for (int r = 0; r < 6; ++r) {
      ev[r].rank = r;
      ev[r].node = "n" + std::to_string(r / 2 + 1);
      ev[r].attached = true;
      for (auto [s, n] : {std::pair{(r + 2) % 6, 1}, {(r + 4) % 6, 1}, {r ^ 1, 2}}) {
        auto& p = ev[r].peers[s];
        const std::uint64_t msgs = 100u * static_cast<std::uint64_t>(n);  // 100 steps a window
        p.recvd += msgs;
        p.waits += msgs;
        p.recvd_bytes += msgs * 512;
        p.wait_s += wait(r, s) * static_cast<double>(msgs);
      }
    }
    auto res = t.update(ev, now += 1.0, {});
    for (auto& d : res.verdicts) named.push_back(d);
  }
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{5});
  CHECK_FALSE(t.flagged(4));
}

TEST_CASE("late sender: a flagged rank that is no longer compared is no longer flagged after K windows") {
  // Rank 3 is named, then stops sending (its receivers get nothing from it):
  // nothing can check its flag, which would otherwise hold its incident open
  // (and the trigger asking for gathers) for the rest of the job.
  Ring g(6);
  LateSenderTracker t;
  double now = 0;
  for (int w = 0; w < 3; ++w) {
    g.window(100, [](int, int s) { return s == 3 ? 2e-3 : 0.2e-3; });
    t.update(g.ev, now += 1.0, {});
  }
  REQUIRE(t.flagged(3));
  auto quiet = [&] {  // everyone but 3 sends
    for (int r = 0; r < 6; ++r)
      for (int s : {(r + 5) % 6, (r + 1) % 6}) {
        if (s == 3) continue;
        auto& p = g.ev[r].peers[s];
        p.recvd += 100;
        p.waits += 100;
        p.recvd_bytes += 100 * 128;
        p.wait_s += 0.2e-3 * 100;
      }
  };
  for (int w = 0; w < 2; ++w) {
    quiet();
    CHECK(t.update(g.ev, now += 1.0, {LateSenderTracker::key_for(3)}).compared);
    CHECK(t.flagged(3));
  }
  quiet();
  t.update(g.ev, now += 1.0, {LateSenderTracker::key_for(3)});
  CHECK_FALSE(t.flagged(3));
}

TEST_CASE("late sender: jitter, too few messages, or senders with no equivalent name nobody") {
  Ring g(6);
  LateSenderTracker t;
  double now = 0;
  // Healthy with noise: lateness 0.1-0.3 ms in a 10 ms step, never the same rank.
  for (int w = 0; w < 6; ++w) {
    g.window(100, [w](int r, int s) { return ((r * 7 + s * 3 + w) % 3) * 0.1e-3 + 0.1e-3; });
    now += 1.0;
    CHECK(t.update(g.ev, now, {}).verdicts.empty());
  }
  // A window with fewer than min_messages stays open.
  LateSenderTracker t2;
  Ring h(6);
  h.window(5, [](int, int s) { return s == 3 ? 5e-3 : 0.0; });
  auto res = t2.update(h.ev, 1.0, {});
  CHECK_FALSE(res.compared);
  // Two ranks: no class of three equivalent senders, nothing to compare.
  Ring two(2);
  LateSenderTracker t3;
  for (int w = 0; w < 4; ++w) {
    two.window(100, [](int, int s) { return s == 1 ? 5e-3 : 0.0; });
    CHECK(t3.update(two.ev, 1.0 + w, {}).verdicts.empty());
  }
}

TEST_CASE("late receiver: senders blocked in MPI_Send for one receiver name it, not its senders; late senders do not") {
  // Three 2-stage pipelines (0->1, 2->3, 4->5) sending 256 KiB messages
  // (above the eager limit: a send waits for its receive). Rank 3 receives
  // 2 ms late per 10 ms step: rank 2 waits in MPI_Send for it. The late-sender
  // view of the same evidence names nobody (the receives wait little).
  Ring job(6);  // only its ranks: the pipelines' edges are set below
  auto& ev = job.ev;
  auto window = [&](std::uint64_t msgs, double late3) {
    for (int a = 0; a < 6; a += 2) {
      auto& fwd = ev[a].peers[a + 1];  // a sends forward to a + 1 ...
      fwd.sent += msgs;
      fwd.sent_bytes += msgs * 262144;
      fwd.send_wait_s += (a + 1 == 3 ? late3 : 0.1e-3) * static_cast<double>(msgs);
      auto& back = ev[a + 1].peers[a];  // ... which receives it
      back.recvd += msgs;
      back.recvd_bytes += msgs * 262144;
      back.waits += msgs;
      // The late receiver waits a hair more itself than the job's median
      // (0.103 against 0.1 ms): noise, not a wait state passed on to it.
      back.wait_s += (a + 1 == 3 && late3 > 1e-3 ? 0.103e-3 : 0.1e-3) * static_cast<double>(msgs);
    }
  };
  LateSenderTracker rx(LateSenderOptions{.receivers = true}), tx;
  double now = 0;
  std::vector<VerdictDraft> named, by_senders;
  for (int w = 0; w < 6; ++w) {  // healthy first: the jitter history
    window(100, 0.1e-3 + 0.01e-3 * (w % 2));
    now += 1.0;
    CHECK(rx.update(ev, now, {}).verdicts.empty());
    CHECK(tx.update(ev, now, {}).verdicts.empty());
  }
  for (int w = 0; w < 3; ++w) {
    window(100, 2e-3);
    now += 1.0;
    auto res = rx.update(ev, now, {});
    CHECK(res.compared);
    for (auto& d : res.verdicts) named.push_back(d);
    for (auto& d : tx.update(ev, now, {}).verdicts) by_senders.push_back(d);
  }
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{3});
  CHECK(named[0].evidence["source"] == "p2p_late_receiver");
  CHECK(named[0].evidence["culprits"][0]["late_s"].get<double>() == doctest::Approx(2e-3));
  CHECK(named[0].evidence["waited_by"].contains("2"));
  CHECK(named[0].key == LateSenderTracker::key_for(3));
  CHECK(by_senders.empty());
  // Recovered: resolved after K healthy windows.
  std::vector<std::string> resolved;
  for (int w = 0; w < 3; ++w) {
    window(100, 0.1e-3);
    now += 1.0;
    for (auto& k : rx.update(ev, now, {LateSenderTracker::key_for(3)}).resolved) resolved.push_back(k);
  }
  CHECK(resolved == std::vector<std::string>{LateSenderTracker::key_for(3)});
}

// Issue 36 part 2: the absolute guard comes from the job's own jitter. At
// 5 ms steps on a quiet host (steps vary by 0.1 ms) a rank 1.78x slower is
// named; the same rank, when every rank's steps vary by 2 ms (a host where
// every rank shares cores), is not: its excess is within the jitter.
TEST_CASE("the absolute guard is the job's jitter: 1.78x at 5 ms steps named when quiet, not when every step varies") {
  auto run = [](double jitter_s) {
    StragglerTracker t;
    StragglerTracker::Result r;
    for (int round = 1; round <= 3; ++round) {
      auto v = ranks(8, 10 * round, 0.005);
      for (auto& e : v) e.compute_jitter_s = jitter_s;
      v[5].compute_s = 0.0089;
      v[5].compute_jitter_s = 4 * jitter_s;  // its own spread is one of many in the median
      r = t.update(v, {});
    }
    return r;
  };
  auto quiet = run(0.0001);
  REQUIRE(quiet.verdicts.size() == 1);
  CHECK(quiet.verdicts[0].ranks == std::vector<int>{5});
  CHECK(quiet.verdicts[0].evidence["threshold_absolute_s"].get<double>() == doctest::Approx(0.0005));
  CHECK(run(0.002).verdicts.empty());
  // A hostile or broken peer's negative jitter, or an unknown one (0: an
  // older scoutd), is not counted.
  CHECK(absolute_guard(0.0005, 4, {-1.0, 0.0, 0.0, 0.001, 0.001}) == doctest::Approx(0.004));
  CHECK(absolute_guard(0.0005, 4, {}) == doctest::Approx(0.0005));
}

// Found measuring issue 36 part 2: a rank's step count is of the steps in
// its recent history (256 collectives), so it stops growing in a long run;
// a rank slowed after that was never confirmed. Its sequence number goes on.
TEST_CASE("a rank slowed once its history is full is confirmed by its sequence numbers") {
  StragglerTracker t;
  StragglerTracker::Result r;
  for (int round = 1; round <= 3; ++round) {
    auto v = ranks(8, 255, 0.002);
    for (auto& e : v) e.seq = 100000 + 1000 * static_cast<std::uint64_t>(round);
    v[3].compute_s = 0.052;
    r = t.update(v, {});
  }
  REQUIRE(r.verdicts.size() == 1);
  CHECK(r.verdicts[0].ranks == std::vector<int>{3});
}

// Found measuring issue 36 part 2 beside a CPU hog: once the guard is the
// job's jitter, a healthy rank descheduled for a moment (its last 8 steps
// vary by as much as it is above the others) was named within a second.
TEST_CASE("a burst is not a straggler: above by less than its own spread, or confirmed within a second") {
  StragglerTracker t;
  std::set<int> named;
  for (int round = 1; round <= 6; ++round) {
    auto v = ranks(8, 10 * round, 0.002);
    for (auto& e : v) e.compute_jitter_s = 0.00005;
    v[1].compute_s = 0.0035;
    v[1].compute_jitter_s = 0.0012;  // +1.5 ms, its steps vary by 1.2 ms
    for (auto& d : t.update(v, {}, 100 + round).verdicts) named.insert(d.ranks[0]);
  }
  CHECK(named.empty());
  // Steady and well above its spread, but three gathers within a second:
  // not confirmed until the third is a second after the second.
  StragglerTracker u;
  std::vector<double> at = {200.0, 200.4, 200.8, 201.2, 202.3};
  std::vector<std::size_t> counts;
  for (std::size_t i = 0; i < at.size(); ++i) {
    auto v = ranks(8, 10 * static_cast<int>(i + 1), 0.002);
    v[4].compute_s = 0.0035;
    v[4].compute_jitter_s = 0.0001;
    counts.push_back(u.update(v, {}, at[i]).verdicts.size());
  }
  CHECK(counts == std::vector<std::size_t>{0, 0, 0, 0, 1});
}
