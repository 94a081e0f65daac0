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

std::vector<StartFinding> slow_from_start(const std::vector<StartSample>& samples, const ChangePointOptions& o,
                                          bool keep) {
  std::vector<StartFinding> out;
  if (samples.size() < 2) return out;
  // The others' medians, each without the rank itself: sorted once, the
  // rank's own value left out by position (O(n log n) for the job).
  std::vector<double> cpu, own, runq, khz;
  for (auto& s : samples) {
    cpu.push_back(s.cpu);
    own.push_back(s.own);
    if (s.runq >= 0) runq.push_back(s.runq);
    if (s.khz > 0) khz.push_back(static_cast<double>(s.khz));
  }
  for (auto* v : {&cpu, &own, &runq, &khz}) std::sort(v->begin(), v->end());
  // Kept (its incident open): half the distance to the threshold.
  const double runq_min = keep ? o.start_runq / 2 : o.start_runq;
  const double cpu_max = keep ? (1 + o.start_cpu) / 2 : o.start_cpu;
  const double clock_max = keep ? (1 + o.start_clock) / 2 : o.start_clock;
  for (auto& s : samples) {
    StartFinding f;
    f.rank = s.rank;
    f.self = s;
    f.others_cpu = median_without(cpu, s.cpu);
    f.others_own = median_without(own, s.own);
    if (s.runq >= 0 && runq.size() >= 2) f.others_runq = median_without(runq, s.runq);
    if (s.khz > 0 && khz.size() >= 2) f.others_khz = static_cast<long>(median_without(khz, static_cast<double>(s.khz)));
    // It waits for its partners less than they do: they wait, it is waited for.
    if (!keep && s.own >= f.others_own) continue;
    const bool by_runq =
        s.runq >= 0 && f.others_runq >= 0 && s.runq - f.others_runq >= runq_min && s.cpu <= cpu_max * f.others_cpu;
    // A lower clock only while it ran most of the window like the others (an
    // idle core reads a low clock: a rank that waits, or sleeps, would).
    const bool busy = s.cpu >= 0.5 && s.cpu >= 0.9 * f.others_cpu;
    const bool by_clock =
        busy && s.khz > 0 && f.others_khz > 0 && s.khz <= clock_max * static_cast<double>(f.others_khz);
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
      {"rule", "slower than the other ranks by its own evidence (it waits for a CPU, or its clock is lower) and "
               "waits for its partners less than they do, with no change against its own past (slow from its "
               "first windows, or its slow windows became its normal): inconclusive"},
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
