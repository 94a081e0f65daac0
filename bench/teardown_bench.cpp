// The end rules at a job's teardown (detect_crash: end events, exits before
// MPI_Finalize, deaths), as the deciding observer runs them on one gather:
// N ranks on N/8 nodes whose clocks differ (the ranks' ages say the order),
// three teardowns: every rank exits (a SIGTERM handler calling exit()),
// one rank is SIGKILLed and the launcher kills the rest 0.5 s later, every
// rank faults at once. Baseline in the same run: the pass the rules made
// before, each rank compared with every other ("did another die first?"),
// timed up to 20,000 ranks (quadratic: 100,000 would take minutes).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "scoutd/detect/progress_detector.hpp"

using namespace scout::scoutd;
using Clock = std::chrono::steady_clock;

namespace {
std::vector<RankEvidence> job(int n, int scenario) {
  std::vector<RankEvidence> v(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    RankEvidence& e = v[static_cast<std::size_t>(r)];
    e.rank = r;
    e.node = "n" + std::to_string(r / 8);
    e.attached = true;
    e.alive = false;
    const std::int64_t boot = static_cast<std::int64_t>(r / 8) * 3'600'000'000'000LL;  // an hour apart
    const double age = scenario == 1 && r == n / 2 ? 3.0 : 2.5 - 1e-6 * (r % 997);
    e.dead_s = age;
    e.death_ns = boot + static_cast<std::int64_t>((10.0 - age) * 1e9);
    if (scenario == 0) e.end_kind = "exit";
    if (scenario == 2) e.end_kind = "signal", e.end_code = 11;
    if (!e.end_kind.empty()) {  // written 50 ms before the process was gone (a handler, a core dump)
      e.end_ns = e.death_ns - 50'000'000;
      e.end_age_s = age + 0.05;
    }
  }
  return v;
}

// The old pass: every rank against every other, by the instants.
int naive(const std::vector<RankEvidence>& v) {
  int firsts = 0;
  for (auto& e : v) {
    bool other_first = false;
    for (auto& o : v)
      if (&o != &e && o.death_ns > 0 && (o.node == e.node ? o.death_ns < e.death_ns : o.dead_s > e.dead_s))
        other_first = true;
    firsts += !other_first;
  }
  return firsts;
}

template <class F>
double best_ms(F f, int reps) {
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return best;
}
}  // namespace

int main() {
  const char* names[] = {"every rank exits", "one SIGKILL, then the rest", "every rank faults"};
  std::printf("%-28s %8s %14s %16s %8s %s\n", "teardown", "ranks", "rules ms", "pairwise ms", "ratio", "verdict");
  for (int scenario = 0; scenario < 3; ++scenario)
    for (int n : {1000, 20000, 100000}) {
      const auto v = job(n, scenario);
      DetectorOptions opt;
      opt.stopping = true;
      std::optional<VerdictDraft> d;
      const double ms = best_ms([&] { d = detect_crash(v, opt); }, 3);
      double base = -1;
      if (n <= 20000) base = best_ms([&] { volatile int k = naive(v); (void)k; }, 1);
      const std::string said = d ? std::string(scout::c3::to_string(d->kind)) + " " + std::to_string(d->ranks.size()) +
                                       " rank(s)" : "none";
      if (base >= 0)
        std::printf("%-28s %8d %14.2f %16.1f %7.0fx %s\n", names[scenario], n, ms, base, base / std::max(ms, 1e-3),
                    said.c_str());
      else
        std::printf("%-28s %8d %14.2f %16s %8s %s\n", names[scenario], n, ms, "-", "-", said.c_str());
    }
  return 0;
}
