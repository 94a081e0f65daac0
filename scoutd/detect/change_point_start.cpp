// Slow from the start (see change_point.hpp): a rank compared with the
// other ranks by what is its own (its wait for a CPU, its CPU's clock), not
// by what its role sets (its share of work, its partners).
#include <algorithm>

#include <fmt/format.h>

#include "libc3/verdict_rules.hpp"
#include "scoutd/detect/change_point.hpp"
#include "scoutd/detect/late_sender.hpp"

namespace scout::scoutd {

using nlohmann::json;

namespace {

// The median of the values of `all` but index `skip`'s (at least one other).
template <class T>
double median_but(const std::vector<T>& all, std::size_t skip) {
  std::vector<double> v;
  v.reserve(all.size());
  for (std::size_t i = 0; i < all.size(); ++i)
    if (i != skip) v.push_back(static_cast<double>(all[i]));
  return v.empty() ? 0 : c3::median(v);
}

}  // namespace

std::vector<StartFinding> slow_from_start(const std::vector<StartSample>& samples, const ChangePointOptions& o) {
  std::vector<StartFinding> out;
  const std::size_t n = samples.size();
  if (n < 2) return out;
  // The others' medians, each without the rank itself: sorted once, the
  // rank's own value taken out by position (O(n log n) for the job).
  std::vector<double> cpu, own, runq, khz;
  for (auto& s : samples) {
    cpu.push_back(s.cpu);
    own.push_back(s.own);
    if (s.runq >= 0) runq.push_back(s.runq);
    if (s.khz > 0) khz.push_back(static_cast<double>(s.khz));
  }
  auto without = [](std::vector<double> v, double x) {
    // v holds x: the median of the others.
    std::sort(v.begin(), v.end());
    const auto it = std::lower_bound(v.begin(), v.end(), x);
    if (it != v.end() && *it == x) v.erase(it);
    return v.empty() ? -1.0 : c3::median(v);
  };
  const bool small = n <= 64;  // a copy per rank is cheap; past it, the medians of all
  std::vector<double> cpu_s = cpu, own_s = own, runq_s = runq, khz_s = khz;
  for (auto* v : {&cpu_s, &own_s, &runq_s, &khz_s}) std::sort(v->begin(), v->end());
  auto med_all = [](const std::vector<double>& v) { return v.empty() ? -1.0 : c3::median(v); };
  for (std::size_t i = 0; i < n; ++i) {
    const StartSample& s = samples[i];
    StartFinding f;
    f.rank = s.rank;
    f.self = s;
    f.others_cpu = small ? median_but(cpu, i) : med_all(cpu_s);
    f.others_own = small ? median_but(own, i) : med_all(own_s);
    if (s.runq >= 0) f.others_runq = small ? without(runq, s.runq) : med_all(runq_s);
    if (s.khz > 0) f.others_khz = static_cast<long>(small ? without(khz, static_cast<double>(s.khz)) : med_all(khz_s));
    // It waits for its partners least: the others wait, it is waited for.
    if (s.own >= f.others_own) continue;
    const bool by_runq = s.runq >= 0 && f.others_runq >= 0 && s.runq - f.others_runq >= o.start_runq &&
                         s.cpu <= o.start_cpu * f.others_cpu;
    const bool by_clock = s.khz > 0 && f.others_khz > 0 && s.khz <= o.start_clock * static_cast<double>(f.others_khz);
    if (!by_runq && !by_clock) continue;
    f.by_clock = !by_runq;
    out.push_back(f);
  }
  return out;
}

VerdictDraft ChangePointTracker::start_verdict(const StartFinding& f, const RankEvidence& e, bool coll,
                                               double window_s) const {
  VerdictDraft d;
  d.kind = c3::VerdictKind::kStraggler;
  d.status = c3::VerdictStatus::kInconclusive;
  d.ranks = {f.rank};
  d.hosts = {e.node};
  d.key = LateSenderTracker::key_for(f.rank);
  const std::string cause =
      f.by_clock
          ? fmt::format("its CPU's clock is {:.0f} MHz, the other ranks' {:.0f} MHz: a slower or throttled CPU",
                        static_cast<double>(f.self.khz) / 1000, static_cast<double>(f.others_khz) / 1000)
          : fmt::format("runnable and waiting for a CPU {:.0f}% of each window, the other ranks {:.0f}%: another "
                        "process on its core, or a CPU quota throttling it",
                        100 * f.self.runq, 100 * f.others_runq);
  d.evidence = {
      {"rule", "slower than the other ranks from its first windows by its own evidence (it waits for a CPU, or its "
               "clock is lower) and waits least for its partners; no earlier normal of its own shows a change and "
               "no equivalent peers compare it: inconclusive"},
      {"type", coll ? "collective" : "p2p"},
      {"source", "slow_from_start"},
      {"culprits", json::array({{{"rank", f.rank}, {"host", e.node}, {"pid", e.pid}}})},
      {"cpu_share", f.self.cpu},
      {"others_cpu_share", f.others_cpu},
      {"runq_share", f.self.runq},
      {"others_runq_share", f.others_runq},
      {"own_wait", f.self.own},
      {"others_own_wait", f.others_own},
      {"cause", cause},
      {"window_s", window_s}};
  if (f.self.khz > 0) {
    d.evidence["cpu_khz"] = f.self.khz;
    d.evidence["others_cpu_khz"] = f.others_khz;
  }
  auto it = start_confirm_.find(f.rank);
  d.evidence["windows"] = it == start_confirm_.end() ? 0 : it->second;
  return d;
}

}  // namespace scout::scoutd
