// Stragglers against their own past (change_point.hpp): a rank whose CPU
// share drops while its receivers wait more for it is named after K windows
// and resolved after it recovers; a rank's role, a change of the whole job,
// a propagated delay, a rank stopped for good and a rank that only sleeps
// more are not named.
#include <doctest/doctest.h>

#include <random>

#include "scoutd/detect/change_point.hpp"
#include "scoutd/detect/late_sender.hpp"

using namespace scout::scoutd;

namespace {

// An irregular pattern: 0 -> {1, 2}, 1 -> {0, 3}, 2 -> {0}, 3 -> {1, 2};
// no two senders have the same offsets (the late-sender rule has no class).
const std::vector<std::pair<int, int>> kEdges = {{0, 1}, {0, 2}, {1, 0}, {1, 3}, {2, 0}, {3, 1}, {3, 2}};

struct Job {
  std::vector<RankEvidence> ev;
  double now = 0;
  std::mt19937 rng{7};
  Job() {
    for (int r = 0; r < 4; ++r) {
      RankEvidence e;
      e.rank = r;
      e.node = "n" + std::to_string(r / 2 + 1);
      e.pid = 100 + r;
      e.attached = true;
      e.cpu_ns = 0;
      e.runq_ns = 0;
      e.sched_at_ns = 1;
      ev.push_back(e);
    }
  }
  // One window of `len` seconds: sender s makes each receiver wait
  // caused(s) of the window; rank r has cpu(r) of a CPU; `msgs` per edge.
  template <class C, class U>
  void window(C caused, U cpu, double jitter = 0.02, std::uint64_t msgs = 200, double len = 2.5) {
    std::uniform_real_distribution<double> j(-jitter, jitter);
    for (auto [s, r] : kEdges) {
      auto& p = ev[r].peers[s];
      p.recvd += msgs;
      p.waits += msgs;
      p.wait_s += std::max(0.0, caused(s) + j(rng)) * len;
    }
    for (auto& e : ev) {
      e.cpu_ns += static_cast<long long>(std::max(0.0, cpu(e.rank) + j(rng)) * len * 1e9);
      e.sched_at_ns += static_cast<std::int64_t>(len * 1e9);
    }
    now += len;
  }
};

std::vector<VerdictDraft> run(ChangePointTracker& t, Job& job, std::set<std::string> open = {}) {
  return t.update(job.ev, job.now, open).verdicts;
}

// Role: rank 0 is a root (its receivers wait more for it, it has less CPU)
// for the whole run.
double role_caused(int s) { return s == 0 ? 0.3 : 0.1; }
double role_cpu(int r) { return r == 0 ? 0.7 : 0.95; }

}  // namespace

TEST_CASE("change point: a rank slowed from outside is named against its own past, then resolved") {
  Job job;
  ChangePointTracker t;
  run(t, job);  // the first gather opens the first window
  for (int w = 0; w < 8; ++w) {
    job.window(role_caused, role_cpu);
    CHECK(run(t, job).empty());
  }
  // Rank 2 gets a third of a CPU (stopped, a quota, a hog on its core): its
  // receiver waits for it; its neighbour waits and propagates the delay.
  auto slow_caused = [](int s) { return s == 2 ? 0.5 : s == 0 ? 0.45 : 0.1; };
  auto slow_cpu = [](int r) { return r == 2 ? 0.3 : role_cpu(r); };
  std::vector<VerdictDraft> named;
  int windows = 0;
  while (named.empty() && windows < 10) {
    job.window(slow_caused, slow_cpu);
    named = run(t, job);
    ++windows;
  }
  CHECK(windows == 3);  // K consecutive windows
  REQUIRE(named.size() == 1);
  const VerdictDraft& d = named[0];
  CHECK(d.ranks == std::vector<int>{2});
  CHECK(d.hosts == std::vector<std::string>{"n2"});
  CHECK(d.key == LateSenderTracker::key_for(2));
  CHECK(d.evidence["source"] == "p2p_change_point");
  CHECK(d.evidence["cpu_share"].get<double>() == doctest::Approx(0.3).epsilon(0.1));
  CHECK(d.evidence["baseline_cpu_share"].get<double>() == doctest::Approx(0.95).epsilon(0.05));
  CHECK(d.evidence["caused_wait"].get<double>() > d.evidence["baseline_caused_wait"].get<double>());
  CHECK(d.evidence["waited_by"].contains("0"));
  // Open: not named again while it stays slow.
  const std::set<std::string> open = {d.key};
  for (int w = 0; w < 3; ++w) {
    job.window(slow_caused, slow_cpu);
    auto res = t.update(job.ev, job.now, open);
    CHECK(res.verdicts.empty());
    CHECK(res.resolved.empty());
    CHECK(t.flagged(2));
  }
  // Recovered: K healthy windows resolve it.
  std::vector<std::string> resolved;
  for (int w = 0; w < 3; ++w) {
    job.window(role_caused, role_cpu);
    auto res = t.update(job.ev, job.now, open);
    CHECK(res.verdicts.empty());
    for (auto& k : res.resolved) resolved.push_back(k);
  }
  CHECK(resolved == std::vector<std::string>{d.key});
}

TEST_CASE("change point: role, a change of the whole job, a propagated delay and more sleep name nobody") {
  Job job;
  ChangePointTracker t;
  run(t, job);
  for (int w = 0; w < 6; ++w) {
    job.window(role_caused, role_cpu);
    CHECK(run(t, job).empty());
  }
  SUBCASE("jitter: every window differs a little") {
    for (int w = 0; w < 20; ++w) {
      job.window(role_caused, role_cpu, 0.05);
      CHECK(run(t, job).empty());
    }
  }
  SUBCASE("the whole job slows (a phase, a busier node): every rank's share drops") {
    for (int w = 0; w < 10; ++w) {
      job.window([](int s) { return role_caused(s) + 0.2; }, [](int r) { return role_cpu(r) * 0.5; });
      CHECK(run(t, job).empty());
    }
  }
  SUBCASE("a rank its receivers wait for more, with its CPU share unchanged (propagated, or slower work)") {
    for (int w = 0; w < 10; ++w) {
      job.window([](int s) { return s == 3 ? 0.6 : role_caused(s); }, role_cpu);
      CHECK(run(t, job).empty());
    }
  }
  SUBCASE("a rank that sleeps more while it waits (blocking waits): share down, nobody waits more for it") {
    for (int w = 0; w < 10; ++w) {
      job.window(role_caused, [](int r) { return r == 1 ? 0.3 : role_cpu(r); });
      CHECK(run(t, job).empty());
    }
  }
  SUBCASE("a rank stopped for good sends nothing: the progress rules' to name, not a straggler") {
    for (int w = 0; w < 10; ++w) {
      job.window([](int s) { return s == 2 ? 0.9 : role_caused(s); }, [](int r) { return r == 2 ? 0.0 : role_cpu(r); },
                 0.02, 200);
      // Rank 2's receivers got nothing from it: undo its messages.
      for (auto [s, r] : kEdges)
        if (s == 2) job.ev[r].peers[2].recvd -= 200;
      CHECK(run(t, job).empty());
    }
  }
}

TEST_CASE("change point: a restarted rank (new pid, counters back to zero) starts a new baseline") {
  Job job;
  ChangePointTracker t;
  run(t, job);
  for (int w = 0; w < 6; ++w) {
    job.window(role_caused, role_cpu);
    run(t, job);
  }
  job.ev[2].pid = 999;
  job.ev[2].cpu_ns = 0;
  for (auto& e : job.ev) e.peers.erase(2);
  for (int w = 0; w < 6; ++w) {
    job.window(role_caused, role_cpu);
    CHECK(run(t, job).empty());
  }
}
