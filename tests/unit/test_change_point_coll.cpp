// Stragglers against their own past in collective-only codes
// (change_point.hpp): a rank whose CPU share drops while the other ranks
// wait for it inside collectives is named after K windows, whatever its
// role; the ranks that wait for it, a change of the whole job and a rank
// the compute rule has named already are not.
#include <doctest/doctest.h>

#include <functional>
#include <random>

#include "scoutd/detect/change_point.hpp"
#include "scoutd/detect/late_sender.hpp"

using namespace scout::scoutd;

namespace {

struct CollJob {
  std::vector<RankEvidence> ev;
  double now = 0;
  std::mt19937 rng{11};
  std::function<double(int)> runq = [](int) { return 0.01; };
  explicit CollJob(int n) {
    for (int r = 0; r < n; ++r) {
      RankEvidence e;
      e.rank = r;
      e.node = "n" + std::to_string(r + 1);
      e.pid = 200 + r;
      e.attached = true;
      e.cpu_ns = 0;
      e.runq_ns = 0;
      e.sched_at_ns = 1;
      e.coll_in_ns = 0;
      ev.push_back(e);
    }
  }
  // One window of `len` seconds: every rank enters `rate` collectives a
  // second, spends inside(r) of the window inside them and has cpu(r) of a CPU.
  std::function<long long(int)> io = [](int) { return 0LL; };  // bytes read and written a second
  double jitter = 0.02;
  void window(const std::function<double(int)>& inside, const std::function<double(int)>& cpu, double rate = 100,
              double len = 2.5) {
    std::uniform_real_distribution<double> j(-jitter, jitter);
    for (auto& e : ev) {
      e.seq += static_cast<std::uint64_t>(rate * len);
      e.coll_in_ns += static_cast<long long>(std::max(0.0, inside(e.rank) + j(rng)) * len * 1e9);
      e.cpu_ns += static_cast<long long>(std::max(0.0, cpu(e.rank) + j(rng)) * len * 1e9);
      e.runq_ns += static_cast<long long>(runq(e.rank) * len * 1e9);
      e.sched_at_ns += static_cast<std::int64_t>(len * 1e9);
      e.rchar = 0;
      e.wchar += static_cast<long long>(static_cast<double>(io(e.rank)) * len);
    }
    now += len;
  }
};

std::vector<VerdictDraft> run(ChangePointTracker& t, CollJob& job, const std::set<std::string>& open = {}) {
  return t.update(job.ev, job.now, open).verdicts;
}

// Roles: rank 0 computes more each step (it waits least in the collectives).
double role_inside(int r) { return r == 0 ? 0.05 : 0.4; }
double full_cpu(int) { return 0.95; }

// Slows `slow` to a third of a CPU: it arrives last and waits little; the
// others wait for it; the job's collectives slow down.
struct Slowed {
  int slow;
  double inside(int r) const { return r == slow ? 0.03 : 0.75; }
  double cpu(int r) const { return r == slow ? 0.3 : 0.95; }
};

// Healthy windows, then slow ones until a verdict (at most 10): the verdicts and windows taken.
std::pair<std::vector<VerdictDraft>, int> slow_until_named(ChangePointTracker& t, CollJob& job, int slow,
                                                           const std::set<std::string>& open = {}) {
  run(t, job);
  for (int w = 0; w < 6; ++w) {
    job.window(role_inside, full_cpu);
    CHECK(run(t, job, open).empty());
  }
  Slowed s{slow};
  std::vector<VerdictDraft> named;
  int windows = 0;
  while (named.empty() && windows < 10) {
    job.window([&](int r) { return s.inside(r); }, [&](int r) { return s.cpu(r); }, 40);
    named = run(t, job, open);
    ++windows;
  }
  return {named, windows};
}

}  // namespace

TEST_CASE("change point, collectives: a rank slowed from outside is named, not the rank that computes more") {
  CollJob job(4);
  ChangePointTracker t;
  auto [named, windows] = slow_until_named(t, job, 3);
  CHECK(windows == 3);
  REQUIRE(named.size() == 1);
  const VerdictDraft& d = named[0];
  CHECK(d.ranks == std::vector<int>{3});
  CHECK(d.hosts == std::vector<std::string>{"n4"});
  CHECK(d.key == LateSenderTracker::key_for(3));
  CHECK(d.evidence["source"] == "coll_change_point");
  CHECK(d.evidence["type"] == "collective");
  CHECK(d.evidence["cpu_share"].get<double>() == doctest::Approx(0.3).epsilon(0.1));
  CHECK(d.evidence["coll_wait"].get<double>() < d.evidence["baseline_coll_wait"].get<double>());
  CHECK(d.evidence["caused_wait"].get<double>() > d.evidence["baseline_caused_wait"].get<double>() + 0.2);
  CHECK(!t.flagged(0));
  CHECK(!t.flagged(1));
}

TEST_CASE("change point, collectives: two ranks, the slowed one is named by the other's wait") {
  CollJob job(2);
  ChangePointTracker t;
  auto [named, windows] = slow_until_named(t, job, 1);
  CHECK(windows == 3);
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{1});
  CHECK(!t.flagged(0));
}

TEST_CASE("change point, collectives: a rank that waits more inside collectives is a victim, never named") {
  // Rank 1 loses CPU too (it yields while it waits) but waits more inside
  // collectives; rank 2 is the slow one.
  CollJob job(4);
  ChangePointTracker t;
  run(t, job);
  for (int w = 0; w < 6; ++w) {
    job.window(role_inside, full_cpu);
    CHECK(run(t, job).empty());
  }
  std::set<int> named;
  for (int w = 0; w < 6; ++w) {
    job.window([](int r) { return r == 2 ? 0.03 : 0.8; }, [](int r) { return r == 2 ? 0.3 : r == 1 ? 0.5 : 0.95; },
               40);
    for (auto& d : run(t, job)) named.insert(d.ranks.begin(), d.ranks.end());
  }
  CHECK(named == std::set<int>{2});
}

TEST_CASE("change point, collectives: the whole job slowing, or nobody waiting more, names nobody") {
  CollJob job(4);
  ChangePointTracker t;
  run(t, job);
  for (int w = 0; w < 6; ++w) {
    job.window(role_inside, full_cpu);
    CHECK(run(t, job).empty());
  }
  // Every rank loses half its CPU (a busier host): nobody's.
  for (int w = 0; w < 5; ++w) {
    job.window(role_inside, [](int) { return 0.45; }, 50);
    CHECK(run(t, job).empty());
  }
  // Rank 2 sleeps more but nobody waits more for it (not on the critical path).
  for (int w = 0; w < 6; ++w) job.window(role_inside, full_cpu);
  for (int w = 0; w < 5; ++w) {
    job.window(role_inside, [](int r) { return r == 2 ? 0.4 : 0.95; });
    CHECK(run(t, job).empty());
  }
}

TEST_CASE("change point, collectives: no second incident while the compute rule has the rank") {
  CollJob job(4);
  ChangePointTracker t;
  const std::set<std::string> open = {StragglerTracker::key_for(2)};
  auto [named, windows] = slow_until_named(t, job, 2, open);
  CHECK(named.empty());
  CHECK(t.flagged(2));  // still flagged: the incident is one, whichever rule opened it
}

TEST_CASE("change point, collectives: a rank with point-to-point messages is compared by them, not its collectives") {
  CollJob job(3);
  job.ev[1].p2p_ops = 5;  // it sent messages once: not collective-only
  ChangePointTracker t;
  auto [named, windows] = slow_until_named(t, job, 1);
  CHECK(named.empty());  // no receivers: not compared at all
  // A single collective-only rank has nobody to wait for it.
  CollJob alone(1);
  ChangePointTracker t1;
  auto [none, w1] = slow_until_named(t1, alone, 0);
  CHECK(none.empty());
}

TEST_CASE("change point, collectives: a rank that needs 1% of a CPU is not named by its share's noise") {
  // Compute that sleeps (an I/O wait, a timer): rank 1 runs 1.3% of the
  // time; stopped from outside it runs 0.5%: within the noise of such a
  // share (5% of a CPU at least), however long rank 0 waits.
  CollJob job(2);
  job.jitter = 0.0005;  // a steady share: its spread alone would not hide the drop
  ChangePointTracker t;
  run(t, job);
  auto light = [](int r) { return r == 1 ? 0.013 : 0.02; };
  for (int w = 0; w < 6; ++w) {
    job.window([](int) { return 0.004; }, light, 80);
    CHECK(run(t, job).empty());
  }
  for (int w = 0; w < 6; ++w) {
    job.window([](int r) { return r == 1 ? 0.002 : 0.58; }, [](int r) { return r == 1 ? 0.005 : 0.58; }, 35);
    CHECK(run(t, job).empty());
  }
}

TEST_CASE("change point, collectives: a rank stopped inside collectives at times, its own share up, is named") {
  // Stopped 60% of the time, now and then inside a collective: its own
  // share inside rises (0.06 to 0.4 in some windows), by less than the
  // others' (0.06 to 0.65); it is still the one they wait for.
  CollJob job(2);
  ChangePointTracker t;
  run(t, job);
  for (int w = 0; w < 6; ++w) {
    job.window([](int) { return 0.06; }, full_cpu);
    CHECK(run(t, job).empty());
  }
  std::vector<VerdictDraft> named;
  int windows = 0;
  for (; windows < 6 && named.empty(); ++windows) {
    const double own = windows % 2 ? 0.4 : 0.1;
    job.window([own](int r) { return r == 1 ? own : 0.65; }, [](int r) { return r == 1 ? 0.37 : 0.96; }, 40);
    named = run(t, job);
  }
  CHECK(windows == 3);
  REQUIRE(named.size() == 1);
  CHECK(named[0].ranks == std::vector<int>{1});
}

TEST_CASE("evidence: a rank's time inside collectives round-trips with its scheduler counters; bad ones refused") {
  RankEvidence e;
  e.rank = 3;
  e.attached = true;
  e.cpu_ns = 5;
  e.runq_ns = 1;
  e.sched_at_ns = 9;
  e.coll_in_ns = 123456789012LL;
  nlohmann::json j = e;
  CHECK(j["sched"]["coll_in_ns"] == 123456789012LL);
  CHECK(j.get<RankEvidence>().coll_in_ns == 123456789012LL);
  e.coll_in_ns = -1;  // unknown (a GPU or threaded rank): not sent, read back as unknown
  j = e;
  CHECK(!j["sched"].contains("coll_in_ns"));
  CHECK(j.get<RankEvidence>().coll_in_ns == -1);
  for (const char* bad : {"-5", "\"12\"", "1.5", "1e30"}) {
    auto b = j;
    b["sched"]["coll_in_ns"] = nlohmann::json::parse(bad);
    CHECK_THROWS_AS(b.get<RankEvidence>(), std::exception);
  }
  // The clock of its CPU, where the node has cpufreq.
  e.cpu_khz = 2'600'000;
  j = e;
  CHECK(j["sched"]["cpu_khz"] == 2'600'000);
  CHECK(j.get<RankEvidence>().cpu_khz == 2'600'000);
  for (const char* bad : {"0", "-1", "100000000", "\"fast\""}) {
    auto b = j;
    b["sched"]["cpu_khz"] = nlohmann::json::parse(bad);
    CHECK_THROWS_AS(b.get<RankEvidence>(), std::exception);
  }
}

// ---- slow from the start ----

namespace {
std::vector<StartSample> samples(std::vector<double> cpu, std::vector<double> runq, std::vector<double> own,
                                 std::vector<long> khz = {}) {
  std::vector<StartSample> v;
  for (std::size_t i = 0; i < cpu.size(); ++i)
    v.push_back({static_cast<int>(i), cpu[i], runq[i], own[i], i < khz.size() ? khz[i] : -1L});
  return v;
}
}  // namespace

TEST_CASE("slow from the start: a rank that waits for a CPU and is waited for stands out; sharing alike does not") {
  const ChangePointOptions o;
  auto f = slow_from_start(samples({0.35, 0.95, 0.9, 0.95}, {0.6, 0.04, 0.05, 0.03}, {0.02, 0.5, 0.45, 0.5}), o);
  REQUIRE(f.size() == 1);
  CHECK(f[0].rank == 0);
  CHECK(!f[0].by_clock);
  CHECK(f[0].others_runq == doctest::Approx(0.04));
  CHECK(f[0].others_cpu == doctest::Approx(0.95));
  // Every rank shares the cores: they all wait alike.
  CHECK(slow_from_start(samples({0.5, 0.45, 0.55, 0.5}, {0.5, 0.55, 0.45, 0.5}, {0.1, 0.5, 0.4, 0.5}), o).empty());
  // It waits for a CPU but also for its partners as much as they do: not the one they wait for.
  CHECK(slow_from_start(samples({0.35, 0.95, 0.9, 0.95}, {0.6, 0.04, 0.05, 0.03}, {0.5, 0.5, 0.45, 0.5}), o).empty());
  // Descheduled inside collectives too, it waits less than the others all the same (test 52: 0.42 against 0.52).
  CHECK(slow_from_start(samples({0.36, 0.86}, {0.64, 0.14}, {0.42, 0.52}), o).size() == 1);
  // Its CPU's clock is under 85% of the others': by its clock.
  f = slow_from_start(samples({0.95, 0.95, 0.95}, {0.01, 0.01, 0.01}, {0.0, 0.4, 0.4}, {1'200'000, 2'600'000, 2'600'000}), o);
  REQUIRE(f.size() == 1);
  CHECK(f[0].rank == 0);
  CHECK(f[0].by_clock);
  CHECK(f[0].others_khz == 2'600'000);
  // One rank: nobody to compare with.
  CHECK(slow_from_start(samples({0.1}, {0.9}, {0.0}), o).empty());
}

TEST_CASE("slow from the start: named inconclusive after twice K windows, never attributed; resolved once it recovers") {
  CollJob job(4);
  job.runq = [](int r) { return r == 2 ? 0.6 : 0.02; };
  ChangePointTracker t;
  run(t, job);
  auto inside = [](int r) { return r == 2 ? 0.03 : 0.7; };
  auto cpu = [](int r) { return r == 2 ? 0.35 : 0.95; };
  std::vector<VerdictDraft> named;
  int windows = 0;
  while (named.empty() && windows < 12) {
    job.window(inside, cpu, 40);
    named = run(t, job);
    ++windows;
  }
  CHECK(windows == 7);  // the first window has no CPU share yet (its start is the first sample), then 2 x K
  REQUIRE(named.size() == 1);
  const VerdictDraft& d = named[0];
  CHECK(d.ranks == std::vector<int>{2});
  CHECK(d.status == scout::c3::VerdictStatus::kInconclusive);
  CHECK(d.key == LateSenderTracker::key_for(2));
  CHECK(d.evidence["source"] == "slow_from_start");
  CHECK(d.evidence["type"] == "collective");
  CHECK(d.evidence["cause"].get<std::string>().rfind("runnable and waiting for a CPU 60%", 0) == 0);
  CHECK(d.evidence["others_runq_share"].get<double>() == doctest::Approx(0.02).epsilon(0.2));
  CHECK(t.flagged(2));
  // Open: not named again, not resolved while it stays slow.
  const std::set<std::string> open = {d.key};
  for (int w = 0; w < 4; ++w) {
    job.window(inside, cpu, 40);
    auto r = t.update(job.ev, job.now, open);
    CHECK(r.verdicts.empty());
    CHECK(r.resolved.empty());
  }
  // It gets its CPU: resolved after K windows.
  job.runq = [](int) { return 0.02; };
  std::vector<std::string> resolved;
  for (int w = 0; w < 6 && resolved.empty(); ++w) {
    job.window(role_inside, full_cpu, 100);
    auto r = t.update(job.ev, job.now, open);
    CHECK(r.verdicts.empty());
    resolved = r.resolved;
  }
  CHECK(resolved == std::vector<std::string>{d.key});
}

TEST_CASE("slow from the start: every rank sharing the cores, or a rank that computes more, names nobody") {
  CollJob job(4);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> q(0.4, 0.6);
  job.runq = [&](int) { return q(rng); };
  ChangePointTracker t;
  run(t, job);
  for (int w = 0; w < 20; ++w) {
    job.window(role_inside, [](int) { return 0.5; }, 60);
    CHECK(run(t, job).empty());
  }
  // Rank 0 computes more (waits least) with its CPU and no run-queue wait of its own.
  CollJob roles(4);
  ChangePointTracker t2;
  run(t2, roles);
  for (int w = 0; w < 20; ++w) {
    roles.window(role_inside, full_cpu, 60);
    CHECK(run(t2, roles).empty());
  }
}

TEST_CASE("change point, collectives: rank 0 not runnable while it writes a checkpoint is in an I/O phase") {
  CollJob job(4);
  ChangePointTracker t;
  run(t, job);
  for (int w = 0; w < 6; ++w) {
    job.window(role_inside, full_cpu);
    CHECK(run(t, job).empty());
  }
  // Rank 0 writes 200 MB/s, blocked in writes: its share drops, the others wait.
  job.io = [](int r) { return r == 0 ? 200LL << 20 : 0LL; };
  Slowed s{0};
  for (int w = 0; w < 6; ++w) {
    job.window([&](int r) { return s.inside(r); }, [&](int r) { return s.cpu(r); }, 40);
    CHECK(run(t, job).empty());
  }
}

TEST_CASE("slow from the start: once named, a rank hovering near the threshold stays flagged; well clear, resolved") {
  CollJob job(4);
  job.runq = [](int r) { return r == 2 ? 0.6 : 0.02; };
  ChangePointTracker t;
  run(t, job);
  auto inside = [](int r) { return r == 2 ? 0.03 : 0.7; };
  auto cpu = [](int r) { return r == 2 ? 0.35 : 0.95; };
  std::vector<VerdictDraft> named;
  for (int w = 0; w < 12 && named.empty(); ++w) {
    job.window(inside, cpu, 40);
    named = run(t, job);
  }
  REQUIRE(named.size() == 1);
  const std::set<std::string> open = {named[0].key};
  // 15% of the window above the others (under the 20% to name, over half
  // of it): kept, not resolved.
  job.runq = [](int r) { return r == 2 ? 0.17 : 0.02; };
  for (int w = 0; w < 5; ++w) {
    job.window(inside, [](int r) { return r == 2 ? 0.8 : 0.95; }, 40);
    auto r = t.update(job.ev, job.now, open);
    CHECK(r.resolved.empty());
    CHECK(t.flagged(2));
  }
  job.runq = [](int) { return 0.02; };
  std::vector<std::string> resolved;
  for (int w = 0; w < 6 && resolved.empty(); ++w) {
    job.window(role_inside, full_cpu, 100);
    resolved = t.update(job.ev, job.now, open).resolved;
  }
  CHECK(resolved == std::vector<std::string>{named[0].key});
}
