// Stragglers against their own past (see change_point.hpp).
#include "scoutd/detect/change_point.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "common/log.hpp"
#include "libc3/verdict_rules.hpp"
#include "scoutd/detect/late_sender.hpp"

namespace scout::scoutd {

namespace {
// Why a rank's CPU share dropped by `drop`: when its time runnable on a run
// queue rose by at least half of it, it wanted the CPU and did not get it
// (and by kRunqFloor of the window at least: a rank that needs 1% of a CPU
// drops by less than the noise of its run-queue delay).
constexpr double kRunqFloor = 0.03;
constexpr double kCollCpuFloor = 0.05;
constexpr double kIoPhaseBytes = 1 << 20;  // per second
std::string cause_of(double runq, double base_runq, double drop) {
  if (runq < 0 || base_runq < 0) return "unknown (no run-queue delay in this window or its baseline)";
  if (runq - base_runq >= std::max(0.5 * drop, kRunqFloor))
    return fmt::format("runnable, waiting for a CPU {:.0f}% of the window (was {:.0f}%): another process on its "
                       "core, or a CPU quota throttling it", 100 * runq, 100 * base_runq);
  return fmt::format("not runnable: its run-queue delay did not rise ({:.0f}% of the window, was {:.0f}%): stopped, "
                     "or blocked outside MPI", 100 * runq, 100 * base_runq);
}
}  // namespace

using nlohmann::json;

namespace {

double spread_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  return c3::robust_scale(v).first;
}


}  // namespace

double median_without(const std::vector<double>& sorted, double x) {
  const std::size_t m = sorted.size();
  if (m < 2) return 0;
  auto i = static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), x) - sorted.begin());
  if (i >= m) i = m - 1;  // x not held (NaN): the largest is left out
  auto at = [&](std::size_t j) { return sorted[j < i ? j : j + 1]; };
  const std::size_t k = m - 1;
  return (at((k - 1) / 2) + at(k / 2)) / 2;
}

ChangePointTracker::Result ChangePointTracker::update(const std::vector<RankEvidence>& ranks, double now_s,
                                                      const std::set<std::string>& open) {
  Result res;
  std::map<int, const RankEvidence*> live;
  for (auto& e : ranks)
    if (e.attached && e.alive && !e.finalized) live[e.rank] = &e;
  if (window_start_s_ < 0) {
    window_start_s_ = now_s;
    for (auto& [r, e] : live)
      for (auto& [s, p] : e->peers) prev_[{r, s}] = {p.recvd, p.sent, p.wait_s, p.send_wait_s};
    return res;
  }
  const double window_s = now_s - window_start_s_;
  if (window_s < opt_.window_s) return res;
  window_start_s_ = now_s;
  res.closed = true;

  // This window's wait per (receiver, sender), from the counters' deltas.
  std::map<int, double> caused_sum, own;
  std::map<int, int> receivers;
  std::map<int, std::uint64_t> sent;
  std::map<int, double> rate;  // messages a rank exchanged per second
  std::map<int, std::map<int, double>> waited_by;           // sender -> waiter -> wait
  std::map<int, std::vector<std::pair<int, double>>> waits_of;  // waiter -> (sender, wait)
  for (auto& [r, e] : live)
    for (auto& [s, p] : e->peers) {
      auto it = prev_.find({r, s});
      const Counters before = it == prev_.end() ? Counters{} : it->second;
      prev_[{r, s}] = {p.recvd, p.sent, p.wait_s, p.send_wait_s};
      if (s == r || p.recvd < before.recvd || p.sent < before.sent || p.wait_s + 1e-9 < before.wait_s ||
          p.send_wait_s + 1e-9 < before.send_wait_s)
        continue;  // restarted
      // r waited for s's messages (s a late sender) and in its blocking
      // sends to s (s a late receiver): both are waits s caused r.
      const std::uint64_t dn = (p.recvd - before.recvd) + (p.sent - before.sent);
      const double dw = (p.wait_s - before.wait_s + p.send_wait_s - before.send_wait_s) / window_s;
      own[r] += dw;
      rate[r] += static_cast<double>(dn) / window_s;
      if (dn == 0 || !live.count(s)) continue;
      caused_sum[s] += dw;
      receivers[s] += 1;
      sent[s] += dn;
      waited_by[s][r] = dw;
      waits_of[r].push_back({s, dw});
    }
  // This window's share of a CPU, per rank, from its scheduler counters.
  // And of the window runnable but waiting on a run queue (contention for
  // its core, or a CPU quota's throttling).
  // And, for a collective-only rank, its share of the window inside
  // collectives and how many it entered.
  std::map<int, double> cpu, runq, coll_in, coll_rate, io_rate;
  for (auto& [r, e] : live) {
    auto it = sched_.find(r);
    if (e->cpu_ns >= 0 && it != sched_.end() && e->pid == it->second.pid && e->sched_at_ns > it->second.at_ns &&
        e->cpu_ns >= it->second.cpu_ns) {
      const Sched& b = it->second;
      const auto dt = static_cast<double>(e->sched_at_ns - b.at_ns);
      cpu[r] = static_cast<double>(e->cpu_ns - b.cpu_ns) / dt;
      if (e->runq_ns >= 0 && b.runq_ns >= 0 && e->runq_ns >= b.runq_ns)
        runq[r] = static_cast<double>(e->runq_ns - b.runq_ns) / dt;
      const long long io = e->rchar >= 0 && e->wchar >= 0 ? e->rchar + e->wchar : -1;
      if (io >= 0 && b.io >= 0 && io >= b.io) io_rate[r] = static_cast<double>(io - b.io) / dt * 1e9;
      if (e->p2p_ops == 0 && e->peers.empty() && e->coll_in_ns >= 0 && b.coll_in_ns >= 0 &&
          e->coll_in_ns >= b.coll_in_ns && e->seq >= b.seq + opt_.min_messages) {
        coll_in[r] = std::min(1.0, static_cast<double>(e->coll_in_ns - b.coll_in_ns) / dt);
        coll_rate[r] = static_cast<double>(e->seq - b.seq) / dt * 1e9;
      }
    }
    if (e->cpu_ns >= 0)
      sched_[r] = {e->pid, e->cpu_ns, e->runq_ns, e->sched_at_ns, e->coll_in_ns, e->seq,
                   e->rchar >= 0 && e->wchar >= 0 ? e->rchar + e->wchar : -1};
  }
  std::vector<double> coll_sorted;
  for (auto& [r, c] : coll_in) coll_sorted.push_back(c);
  std::sort(coll_sorted.begin(), coll_sorted.end());

  struct Now {
    Sample s;
    bool compared = false, early = false, unexplained = false;  // share down, nobody waits more, not faster
    double base_caused = 0, base_own = 0, base_cpu = 0, rise = 0, drop = 0, rise_min = 0, drop_min = 0;
    double base_rate = 0, slowed = 0, slowed_min = 0;
    double base_runq = -1;
    double base_coll = 0, coll_rise_min = 0;
  };
  std::map<int, Now> now;
  std::set<int> candidates;
  for (auto& [s, n] : receivers)
    if (sent[s] >= opt_.min_messages) candidates.insert(s);
  if (coll_in.size() >= 2)  // a collective-only rank needs another to wait for it
    for (auto& [s, c] : coll_in) candidates.insert(s);
  for (int s : candidates) {
    if (!cpu.count(s)) continue;
    Now& x = now[s];
    const double q = runq.count(s) ? runq[s] : -1.0;
    if (coll_in.count(s))
      x.s = {median_without(coll_sorted, coll_in[s]), coll_in[s], cpu[s], coll_rate[s], q, coll_in[s]};
    else
      x.s = {caused_sum[s] / receivers[s], own[s], cpu[s], rate[s], q};
    const auto& hist = baseline_[s];
    // A rank that changed between point-to-point and collective-only has
    // a baseline of the other kind: taken again.
    if (!hist.empty() && (hist.back().coll >= 0) != (x.s.coll >= 0)) {
      baseline_[s].clear();
      lower_[s].clear();
    }
    // Early (fewer than min_baseline windows, at least min_early): compared
    // against the floors only, so that a rank slowed in the job's first
    // seconds keeps its few healthy windows as its baseline (its slow ones
    // stay out, below) instead of making slowness its normal.
    if (static_cast<int>(hist.size()) < std::max(1, std::min(opt_.min_early, opt_.min_baseline))) continue;
    x.early = static_cast<int>(hist.size()) < opt_.min_baseline;
    std::vector<double> cs, os, us, rs, qs, ls;
    for (auto& h : hist) {
      cs.push_back(h.caused);
      os.push_back(h.own);
      us.push_back(h.cpu);
      rs.push_back(h.rate);
      if (h.runq >= 0) qs.push_back(h.runq);
      if (h.coll >= 0) ls.push_back(h.coll);
    }
    if (!ls.empty()) {
      x.base_coll = c3::median(ls);
      x.coll_rise_min = std::max(opt_.floor, (x.early ? 0.0 : opt_.spread_k) * spread_of(ls));
    }
    if (!qs.empty()) x.base_runq = c3::median(qs);
    x.compared = true;
    x.base_caused = c3::median(cs);
    x.base_own = c3::median(os);
    x.base_cpu = c3::median(us);
    x.base_rate = c3::median(rs);
    x.slowed = x.base_rate > 0 ? 1 - x.s.rate / x.base_rate : 0;
    // The spread of two or three windows says nothing: early, the floors.
    const double k = x.early ? 0.0 : opt_.spread_k;
    x.slowed_min = std::max(opt_.rate_floor, x.base_rate > 0 ? k * spread_of(rs) / x.base_rate : 1.0);
    x.rise = x.s.caused - x.base_caused;
    x.drop = x.base_cpu - x.s.cpu;
    x.rise_min = std::max(opt_.floor, k * spread_of(cs));
    x.drop_min = std::max(opt_.cpu_floor * x.base_cpu, k * spread_of(us));
    // A collective-only rank that runs a few percent of a CPU (its compute
    // sleeps: a timer, I/O) loses less than its noise: 5% of a CPU at least.
    if (x.s.coll >= 0) x.drop_min = std::max(x.drop_min, kCollCpuFloor);
  }
  std::set<int> flagged;
  std::vector<double> drops;  // of the compared ranks, sorted: each one's others' median in O(1)
  for (auto& [s, x] : now)
    if (x.compared) drops.push_back(x.drop);
  std::sort(drops.begin(), drops.end());
  // And their run-queue rises: a shortage of CPU the whole job shares.
  std::vector<double> runq_rises;
  for (auto& [s, x] : now)
    if (x.compared && x.s.runq >= 0 && x.base_runq >= 0) runq_rises.push_back(x.s.runq - x.base_runq);
  std::sort(runq_rises.begin(), runq_rises.end());
  for (auto& [s, x] : now) {
    if (!x.compared) continue;
    // The others' drop: a change of the whole job (a phase, a busier node) is
    // nobody's.
    const std::size_t n_others = drops.size() - 1;
    const double others_drop = n_others == 0 ? 0 : median_without(drops, x.drop);
    log::debug("change point: rank {} caused {:.3f} (baseline {:.3f}, rise min {:.3f}) own {:.3f} ({:.3f}) "
               "cpu {:.3f} (baseline {:.3f}, drop min {:.3f}, others' drop {:.3f}) slowed {:.2f} (min {:.2f})",
               s, x.s.caused, x.base_caused, x.rise_min, x.s.own, x.base_own, x.s.cpu, x.base_cpu, x.drop_min,
               others_drop, x.slowed, x.slowed_min);
    // On the critical path: its partners wait for it more, or (three ranks
    // or more compared, so that the others' drop says whether the job slowed
    // as a whole) the job's exchanges with it slowed down with it.
    // Not when its exchanges sped up: a rank that gained CPU while a
    // neighbour on its core was throttled gives it back when the neighbour
    // recovers, and its share falls to what it was while the job goes
    // faster; its receivers waiting more for it then is the end of a
    // baseline taken while another rank was slow, not a slowdown.
    const bool critical = x.rise > x.rise_min || (n_others >= 2 && x.slowed > x.slowed_min);
    const bool sped_up = -x.slowed > opt_.rate_floor;
    // A collective-only rank that waits more inside collectives, as much
    // more as the others do, waits for someone: a victim (the slow one
    // arrives last; stopped or throttled inside a collective it holds the
    // others there too, so its own share may rise, by less than theirs).
    const double own_rise = x.s.coll - x.base_coll;
    const bool waits_more = x.s.coll >= 0 && own_rise > x.coll_rise_min && own_rise >= x.rise - opt_.floor;
    // A collective-only rank not runnable while it reads or writes (rank 0
    // writing a checkpoint): an I/O phase, not a slowdown (the I/O rules
    // name a write that never ends).
    const bool io_phase = x.s.coll >= 0 && io_rate.count(s) && io_rate.at(s) >= kIoPhaseBytes &&
                          !(x.s.runq >= 0 && x.base_runq >= 0 &&
                            x.s.runq - x.base_runq >= std::max(0.5 * x.drop, kRunqFloor));
    // Runnable and waiting for a CPU while the other ranks wait on their run
    // queues about as much more: the host is short of CPU for everyone (other
    // work on the node), not this rank's core; nobody's. A hog on its core or
    // a quota on it raises its own wait alone.
    const double runq_rise = x.s.runq >= 0 && x.base_runq >= 0 ? x.s.runq - x.base_runq : 0;
    const bool host_short = runq_rise >= std::max(0.5 * x.drop, kRunqFloor) && runq_rises.size() >= 3 &&
                            median_without(runq_rises, runq_rise) >= runq_rise / 2;
    if (x.drop > x.drop_min && others_drop < x.drop / 2 && critical && !sped_up && !waits_more && !io_phase &&
        !host_short)
      flagged.insert(s);
    log::debug("change point: rank {} {} (critical {}, sped up {}, waits more {}, I/O phase {}, host short {})", s,
               flagged.count(s) ? "flagged" : "not flagged", critical, sped_up, waits_more, io_phase, host_short);
    x.unexplained = !critical || sped_up;
  }
  // Its own evidence, not the delay it passes on: a flagged rank that waits
  // more for another rank than it did, and more than that one waits more
  // for it, is that one's victim (it yields its core while it waits, so it
  // loses CPU too, and its receivers wait for it more), when the other is
  // flagged too, is a straggler named already (by any rule: a slow link
  // costs its sender no CPU, so only the late-sender rule sees it), or could
  // not be compared (stopped most of a window, it may send too little); one
  // compared and found normal explains nothing (its waits' baselines
  // followed the slow period). A slow rank waits less for
  // its partners, not more. Edges are compared with their own baselines (a
  // rank's role sets its levels).
  auto edge_rise = [&](int waiter, int sender) {
    auto w = waited_by.find(sender);
    if (w == waited_by.end() || !w->second.count(waiter)) return 0.0;
    auto h = edge_base_.find({waiter, sender});
    if (h == edge_base_.end() || h->second.v.empty()) return 0.0;
    std::vector<double> v(h->second.v.begin(), h->second.v.end());
    return w->second.at(waiter) - c3::median(v);
  };
  std::set<int> victims;
  for (int a : flagged)
    for (auto& [b, w] : waits_of[a])
      if (a != b && (flagged.count(b) || !now.count(b) || !now.at(b).compared ||
                     open.count(LateSenderTracker::key_for(b)))) {
        const double a_for_b = edge_rise(a, b), b_for_a = edge_rise(b, a);
        if (a_for_b > opt_.floor && a_for_b > b_for_a) victims.insert(a);
      }
  for (int v : victims) flagged.erase(v);
  // Slow from the start: the other ranks of its kind compared, by what is
  // its own (a point-to-point rank's wait per partner: an edge of a
  // stencil has fewer partners). A rank whose incident this rule opened is
  // kept at half the distance to the thresholds.
  std::map<int, StartFinding> starved;
  for (const bool coll : {false, true}) {
    std::vector<StartSample> samples, kept;
    for (auto& [s, x] : now) {
      if ((x.s.coll >= 0) != coll) continue;
      const double own_each = coll ? x.s.own : x.s.own / static_cast<double>(std::max<std::size_t>(1, waits_of[s].size()));
      samples.push_back({s, x.s.cpu, x.s.runq, own_each, live.at(s)->cpu_khz});
    }
    for (auto& f : slow_from_start(samples, opt_)) starved[f.rank] = f;
    for (auto& f : slow_from_start(samples, opt_, true))
      if (start_flagged_.count(f.rank) && open.count(LateSenderTracker::key_for(f.rank))) starved.emplace(f.rank, f);
  }
  for (int r : flagged) starved.erase(r);
  for (int r : victims) starved.erase(r);
  for (auto& [s, x] : now) {
    // A window whose CPU share dropped (flagged or not) does not enter the
    // baseline: a slow rank that is not confirmed yet must not become its
    // own normal. Unflagged ones, min_baseline in a row, that slowed nobody
    // are a new normal (a neighbour's gain given back, a phase of its own):
    // they become its baseline.
    auto& hist = baseline_[s];
    auto& low = lower_[s];
    if (flagged.count(s) || victims.count(s)) {
      low.clear();
      continue;
    }
    if (x.compared && x.drop > x.drop_min) {
      // Only windows that slowed nobody count towards a new normal (a drop
      // the whole job shared, or one its partners waited for, does not).
      if (!x.unexplained) {
        low.clear();
        continue;
      }
      low.push_back(x.s);
      if (static_cast<int>(low.size()) < opt_.min_baseline) continue;
      log::info("change point: rank {} has run with a lower CPU share ({:.2f}, was {:.2f}) for {} windows "
                "without slowing anyone: its baseline is taken again",
                s, x.s.cpu, x.base_cpu, low.size());
      hist.assign(low.begin(), low.end());
      low.clear();
      continue;
    }
    low.clear();
    hist.push_back(x.s);
    while (static_cast<int>(hist.size()) > opt_.history) hist.pop_front();
    for (auto& [sender, w] : waits_of[s]) {
      edge_base_[{s, sender}].push(w, std::min(opt_.history, 65535));
    }
  }
  // A rank not compared this window breaks a run of lower windows.
  for (auto it = lower_.begin(); it != lower_.end();)
    it = now.count(it->first) ? std::next(it) : lower_.erase(it);
  flagged_ = flagged;

  // Confirmations are consecutive windows: a rank not flagged in this one
  // (compared or not: a rank stopped for good sends nothing, and is the
  // progress rules' to name) starts again.
  for (auto it = confirm_.begin(); it != confirm_.end();)
    it = flagged.count(it->first) ? std::next(it) : confirm_.erase(it);
  for (auto it = start_confirm_.begin(); it != start_confirm_.end();)
    it = starved.count(it->first) ? std::next(it) : start_confirm_.erase(it);
  start_flagged_.clear();
  const int start_windows = opt_.start_windows > 0 ? opt_.start_windows : 2 * opt_.confirmations;
  for (auto& [s, f] : starved) {
    start_flagged_.insert(s);
    healthy_.erase(s);
    const std::string key = LateSenderTracker::key_for(s);
    if (++start_confirm_[s] < start_windows || open.count(key) || open.count(StragglerTracker::key_for(s))) continue;
    res.verdicts.push_back(start_verdict(f, *live.at(s), now.at(s).s.coll >= 0, window_s));
  }
  for (auto& [s, sn] : now) {
    if (!sn.compared || starved.count(s)) continue;
    const std::string key = LateSenderTracker::key_for(s);
    if (!flagged.count(s)) {
      confirm_.erase(s);
      if (open.count(key) && ++healthy_[s] >= opt_.confirmations) {
        res.resolved.push_back(key);
        healthy_.erase(s);
      }
      continue;
    }
    healthy_.erase(s);
    if (++confirm_[s] < opt_.confirmations || open.count(key) || open.count(StragglerTracker::key_for(s))) continue;
    const RankEvidence& e = *live.at(s);
    const bool coll = sn.s.coll >= 0;
    json waited = json::object();
    for (auto& [r, w] : waited_by[s]) waited[std::to_string(r)] = w;
    VerdictDraft d;
    d.kind = c3::VerdictKind::kStraggler;
    d.status = c3::VerdictStatus::kAttributed;
    d.ranks = {s};
    d.hosts = {e.node};
    const double score = sn.rise;
    d.evidence = {
        {"rule", coll ? "the other ranks wait for it inside collectives more than they did, and it does not wait more "
                        "itself, confirmed"
                      : "its receivers wait for it more than they did, and it does not wait more itself, confirmed"},
        {"type", coll ? "collective" : "p2p"},
        {"source", coll ? "coll_change_point" : "p2p_change_point"},
        {"culprits", json::array({{{"rank", s}, {"host", e.node}, {"pid", e.pid}, {"score", score}}})},
        {"caused_wait", sn.s.caused},
        {"baseline_caused_wait", sn.base_caused},
        {"caused_rise_min", sn.rise_min},
        {"own_wait", sn.s.own},
        {"baseline_own_wait", sn.base_own},
        {"cpu_share", sn.s.cpu},
        {"baseline_cpu_share", sn.base_cpu},
        {"cpu_drop_min", sn.drop_min},
        {"runq_share", sn.s.runq},
        {"baseline_runq_share", sn.base_runq},
        {"cause", cause_of(sn.s.runq, sn.base_runq, sn.base_cpu - sn.s.cpu)},
        {"exchange_rate", sn.s.rate},
        {"baseline_exchange_rate", sn.base_rate},
        {"waited_by", waited},
        {"window_s", window_s},
        {"confirmations", confirm_[s]}};
    if (coll) {
      d.evidence["coll_wait"] = sn.s.coll;  // its own share of the window inside collectives
      d.evidence["baseline_coll_wait"] = sn.base_coll;
    }
    d.key = key;
    res.verdicts.push_back(std::move(d));
  }
  return res;
}

}  // namespace scout::scoutd
