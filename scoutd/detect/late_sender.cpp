// Late-sender straggler detection (see late_sender.hpp).
#include "scoutd/detect/late_sender.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "common/log.hpp"
#include "libc3/verdict_rules.hpp"
#include "scoutd/observe/step_timing.hpp"

namespace scout::scoutd {

using nlohmann::json;

std::string LateSenderTracker::key_for(int rank) { return fmt::format("straggler:p2p:{}", rank); }

namespace {
// A rank restarted (a new process, counters back to zero): next window.
bool went_back(const RankEvidence::Peer& p, std::uint64_t recvd, std::uint64_t waits, std::uint64_t sent,
               double wait_s, double send_wait_s) {
  return p.recvd < recvd || p.waits < waits || p.sent < sent || p.wait_s + 1e-9 < wait_s ||
         p.send_wait_s + 1e-9 < send_wait_s;
}
}  // namespace



LateSenderTracker::Result LateSenderTracker::update(const std::vector<RankEvidence>& ranks, double now_s,
                                                    const std::set<std::string>& open) {
  Result res;
  std::map<int, const RankEvidence*> live;
  int world = 0;
  for (auto& e : ranks) {
    world = std::max(world, e.rank + 1);
    if (e.attached && e.alive && !e.finalized) live[e.rank] = &e;
  }
  if (window_start_s_ < 0) window_start_s_ = now_s;
  // Deltas since the window began, per sender.
  struct Sender {
    std::uint64_t msgs = 0, samples = 0;
    double wait_s = 0;
    std::vector<int> offsets;               // signed, normalised, one per receiver
    std::map<int, double> waited_by;        // receiver -> wait in this window
  };
  // Edge (r, s): r waits for s. Late senders: r received from s, and waited
  // in receives; late receivers: r sent to s, and waited in blocking sends
  // (each message a sample: the probe times every blocking send).
  const bool rx = opt_.receivers;
  auto changed = [](const RankEvidence::Peer& p, const Prev& b) {
    return went_back(p, b.recvd, b.waits, b.sent, b.wait_s, b.send_wait_s);
  };
  std::map<int, Sender> senders;  // the blamed side: senders, or receivers
  // What each blamed rank sent (or was sent) in all, messages and bytes, for
  // its size class: summed here, in one pass over the edges.
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> totals;
  for (auto& [r, e] : live)
    for (auto& [s, p] : e->peers) {
      if (s == r || !live.count(s)) continue;
      auto& tot = totals[s];
      tot.first += rx ? p.sent : p.recvd;
      tot.second += rx ? p.sent_bytes : p.recvd_bytes;
      const Prev& before = prev_[{r, s}];
      if (changed(p, before)) continue;
      const std::uint64_t dn = rx ? p.sent - before.sent : p.recvd - before.recvd;
      if (dn == 0) continue;
      const double dw = rx ? p.send_wait_s - before.send_wait_s : p.wait_s - before.wait_s;
      Sender& x = senders[s];
      x.msgs += dn;
      x.samples += rx ? dn : p.waits - before.waits;
      x.wait_s += dw;
      x.waited_by[r] = dw;
      int off = ((r - s) % world + world) % world;
      if (off > world / 2) off -= world;
      x.offsets.push_back(off);
    }
  // How long each rank itself waited per message received, this window: a
  // sender that is late only because it waited for someone else (a wait
  // state propagated from the real straggler) waits a lot itself.
  // Per peer too (the wait per timed message from it, or per blocking send
  // to it): a rank whose lateness came from waiting for one late peer is a
  // victim however many prompt peers dilute its mean.
  std::map<int, double> own_wait;
  std::map<int, std::map<int, double>> waits_on;  // rank -> peer -> wait per message
  for (auto& [r, e] : live) {
    double w = 0;
    std::uint64_t n = 0;
    for (auto& [s, p] : e->peers) {
      const Prev& before = prev_[{r, s}];
      if (changed(p, before)) continue;
      const std::uint64_t dn = p.waits - before.waits;
      const double dw = p.wait_s - before.wait_s;
      n += dn;
      w += dw;
      double on = dn ? dw / static_cast<double>(dn) : 0;
      if (rx) {  // a late receiver may itself be blocked sending
        const std::uint64_t sn = p.sent - before.sent;
        const double sw = p.send_wait_s - before.send_wait_s;
        n += sn;
        w += sw;
        if (sn) on = std::max(on, sw / static_cast<double>(sn));
      }
      if (on > 0) waits_on[r][s] = on;
    }
    if (n) own_wait[r] = w / static_cast<double>(n);
  }
  std::vector<double> waits;
  for (auto& [r, w] : own_wait) waits.push_back(w);
  const double median_own_wait = waits.empty() ? 0 : c3::median(waits);
  // A window closes when every active sender has enough messages.
  bool enough = !senders.empty();
  for (auto& [s, x] : senders) enough &= x.msgs >= opt_.min_messages && x.samples >= opt_.min_messages / 4;
  if (!enough) return res;
  const double window_s = std::max(1e-3, now_s - window_start_s_);
  window_start_s_ = now_s;
  // Each rank's share of a CPU and of a run queue over the window (-1: unknown),
  // from the marks the last window left: a rank without a readable mark
  // then (new, restarted, moved, unreadable) has none this window.
  std::map<int, double> cpu_share, runq_share;
  for (auto it = sched_.begin(); it != sched_.end();)
    it = live.count(it->first) ? std::next(it) : sched_.erase(it);
  for (auto& [r, e] : live) {
    if (e->cpu_ns < 0) {
      sched_.erase(r);
      continue;
    }
    auto m = sched_.find(r);
    if (m != sched_.end() && m->second.pid == e->pid && m->second.node == e->node &&
        e->sched_at_ns > m->second.at_ns && e->cpu_ns >= m->second.cpu_ns) {
      const double dt = static_cast<double>(e->sched_at_ns - m->second.at_ns);
      cpu_share[r] = static_cast<double>(e->cpu_ns - m->second.cpu_ns) / dt;
      runq_share[r] = e->runq_ns >= 0 && m->second.runq_ns >= 0 && e->runq_ns >= m->second.runq_ns
                          ? static_cast<double>(e->runq_ns - m->second.runq_ns) / dt
                          : -1.0;
    }
    sched_[r] = {e->pid, e->node, e->cpu_ns, e->runq_ns, e->sched_at_ns};
  }
  for (auto& [r, e] : live)
    for (auto& [s, p] : e->peers)
      if (s != r) prev_[{r, s}] = {p.recvd, p.waits, p.sent, p.wait_s, p.send_wait_s};

  // Equivalence classes: the signed offsets to the receivers and the size class.
  std::map<std::string, std::vector<int>> classes;
  for (auto& [s, x] : senders) {
    std::sort(x.offsets.begin(), x.offsets.end());
    const auto [recvd, recvd_bytes] = totals[s];
    const int size_class = recvd ? static_cast<int>(std::log2(1.0 + static_cast<double>(recvd_bytes) / recvd)) : 0;
    std::string key = fmt::format("{}|", size_class);
    for (int o : x.offsets) key += fmt::format("{},", o);
    classes[key].push_back(s);
  }
  // A rank's CPU and run-queue shares against the medians of the other
  // ranks of its node (their shares known; the rank alone on its node has
  // nobody to share a core with of the job's, and is judged as anywhere).
  struct Shares {
    double cpu = -1, others_cpu = -1, runq = -1, others_runq = -1;
    bool shared = false;  // the node's other ranks wait on run queues: they share cores
  };
  auto shares_of = [&](int s) {
    Shares sh;
    auto self = cpu_share.find(s);
    if (self == cpu_share.end()) return sh;
    const std::string& node = live.at(s)->node;
    std::vector<double> oc, oq;
    for (auto& [r, c] : cpu_share)
      if (r != s && live.at(r)->node == node) {
        oc.push_back(c);
        if (const double q = runq_share.at(r); q >= 0) oq.push_back(q);
      }
    sh.cpu = self->second;
    sh.runq = runq_share.at(s);
    if (oc.empty()) return sh;
    sh.others_cpu = c3::median(oc);
    if (!oq.empty()) sh.others_runq = c3::median(oq);
    sh.shared = sh.others_runq >= opt_.shared_runq;
    return sh;
  };
  std::map<int, Shares> shares;
  std::set<int> outliers, late_ranks;
  std::map<int, double> lateness, score, class_median, step_of, guard_of, own_of, jitter_of;
  std::map<int, std::size_t> class_size;
  for (auto& [ckey, members] : classes) {
    if (members.size() < 3) continue;
    std::vector<double> late;
    double msgs_per_receiver = 0;
    for (int s : members) {
      const Sender& x = senders[s];
      late.push_back(x.samples ? x.wait_s / static_cast<double>(x.samples) : 0.0);
      msgs_per_receiver += static_cast<double>(x.msgs) / static_cast<double>(x.offsets.size());
    }
    msgs_per_receiver /= static_cast<double>(members.size());
    // The step: the time between two messages of one sender to one receiver.
    const double step_s = msgs_per_receiver > 0 ? window_s / msgs_per_receiver : window_s;

    res.compared = true;
    // Each member's spread of lateness and its median over its healthy
    // windows, once enough are known.
    std::map<int, double> spread, own_median;
    for (int o : members)
      if (auto h = late_hist_.find(o); h != late_hist_.end() && static_cast<int>(h->second.size()) >= opt_.min_history) {
        spread[o] = mad_spread(std::vector<double>(h->second.begin(), h->second.end()));
        own_median[o] = c3::median(std::vector<double>(h->second.begin(), h->second.end()));
      }
    for (std::size_t i = 0; i < members.size(); ++i) {
      const int s = members[i];
      // The others of the class, without this sender: their median and
      // spread (the largest deviation among them). The absolute guard scales
      // with the job: a fraction of its step, never below a floor for timer
      // and scheduler noise.
      std::vector<double> others;
      for (std::size_t j = 0; j < late.size(); ++j)
        if (j != i) others.push_back(late[j]);
      const double om = c3::median(others);
      double jitter = 0;
      for (double o : others) jitter = std::max(jitter, std::fabs(o - om));
      // Their spread is mostly propagated wait states, not noise: it is
      // reported. The guard is the job's own jitter: jitter_k x the median,
      // over the others of the class, of each one's spread of lateness in its
      // healthy windows (min_history of them), never above the step fraction
      // (the guard before that history exists) nor below the floor; and only
      // for a sender whose lateness rose above its own history by as much (a
      // sender always later than its class, its messages crossing nodes, is
      // where it sits, not slow).
      double guard = opt_.step_fraction * step_s;
      std::vector<double> spreads;
      for (int o : members)
        if (o != s && spread.count(o)) spreads.push_back(spread.at(o));
      if (!spreads.empty() && spreads.size() * 2 >= members.size() - 1 && spread.count(s)) {
        const double reduced = opt_.jitter_k * c3::median(spreads);
        if (late[i] - own_median.at(s) > reduced) guard = std::min(guard, reduced);
      }
      guard = std::max(opt_.floor_s, guard);
      jitter_of[s] = jitter;
      lateness[s] = late[i];
      class_median[s] = om;
      class_size[s] = members.size();
      step_of[s] = step_s;
      guard_of[s] = guard;
      score[s] = (step_s + late[i] - om) / step_s;
      own_of[s] = own_wait.count(s) ? own_wait[s] : 0;
      if (late[i] > om + guard && late[i] > opt_.relative * om) late_ranks.insert(s);
    }
  }
  // Of the late ones, the root causes. Its lateness must not be explained by
  // its own waiting (a propagated wait state): it waits itself no more than
  // the job's median (give or take the guard: when every rank waits 0.2 ms,
  // 0.003 ms more is noise, not a wait state), less than half of what it
  // makes the others wait, and less than that for any one late rank, late
  // in this window or named already (a neighbour of the straggler waits for
  // it on one link of four: its mean halves what it waited; and as the
  // straggler slows the whole job every rank waits about as long, so the
  // median does not tell it either).
  for (int s : late_ranks) {
    const double excess = lateness[s] - class_median[s];
    double on_late = 0;
    int on_rank = -1;
    // ... and more than that one waits for it (two slow neighbours that
    // wait for each other in turn do not excuse each other).
    auto back = [&](int q) {
      auto w = waits_on.find(q);
      if (w == waits_on.end()) return 0.0;
      auto v = w->second.find(s);
      return v == w->second.end() ? 0.0 : v->second;
    };
    if (auto w = waits_on.find(s); w != waits_on.end())
      for (auto& [q, v] : w->second)
        if (q != s && (late_ranks.count(q) || open.count(key_for(q))) && v > back(q) && v > on_late)
          on_late = v, on_rank = q;
    const bool root_cause =
        own_of[s] <= median_own_wait + guard_of[s] && own_of[s] < 0.5 * excess && on_late < 0.5 * excess;
    const Shares sh = shares_of(s);
    const bool favoured = sh.shared && sh.cpu > opt_.favoured_cpu * sh.others_cpu;
    if (sh.cpu >= 0) shares[s] = sh;
    if (root_cause && !favoured) outliers.insert(s);
    else if (root_cause)
      log::debug("late {}: rank {} late {:.6f} s (class median {:.6f}) on a node where the ranks share cores "
                 "(its others on a run queue {:.2f} of the time) with a CPU share of {:.2f} against their {:.2f}: "
                 "favoured by the scheduler, late from its work, not slow", rx ? "receivers" : "senders", s,
                 lateness[s], class_median[s], sh.others_runq, sh.cpu, sh.others_cpu);
    else
      log::debug("late {}: rank {} late {:.6f} s (class median {:.6f}, guard {:.6f}) but waits itself {:.6f} s "
                 "(median {:.6f}), {:.6f} s for late rank {}: not the root cause", rx ? "receivers" : "senders", s,
                 lateness[s], class_median[s], guard_of[s], own_of[s], median_own_wait, on_late, on_rank);
  }
  // A flagged rank not compared in K closed windows in a row (it stopped
  // sending, its class shrank below three, it died) is no longer flagged:
  // a flag nobody can check would hold its incident open for good.
  for (auto it = confirm_.begin(); it != confirm_.end();) {
    if (class_size.count(it->first)) {
      unseen_.erase(it->first);
      ++it;
    } else if (++unseen_[it->first] >= opt_.confirmations) {
      unseen_.erase(it->first);
      it = confirm_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = unseen_.begin(); it != unseen_.end();)
    it = confirm_.count(it->first) ? std::next(it) : unseen_.erase(it);
  if (!res.compared) return res;
  // Healthy windows make each sender's history of lateness (its jitter).
  for (auto& [s, l] : lateness) {
    // (Nor a late window that was excused, nor one of a rank whose incident
    // is open: its history is of its healthy windows.)
    if (outliers.count(s) || confirm_.count(s) || late_ranks.count(s) || open.count(key_for(s))) continue;
    auto& h = late_hist_[s];
    h.push_back(l);
    while (static_cast<int>(h.size()) > opt_.history) h.pop_front();
  }
  for (auto& [s, x] : senders) {
    const std::string key = key_for(s);
    if (!outliers.count(s)) {
      if (!class_size.count(s)) continue;  // not compared this window: neither way
      confirm_.erase(s);
      // Late still, but excused this window (it waited itself: on a loaded
      // host every rank does now and then): not a clean window, so it does
      // not count towards resolving its incident, and the clean ones start
      // again.
      if (late_ranks.count(s)) {
        healthy_.erase(s);
        continue;
      }
      if (open.count(key) && ++healthy_[s] >= opt_.confirmations) {
        res.resolved.push_back(key);
        healthy_.erase(s);
      }
      continue;
    }
    healthy_.erase(s);
    if (++confirm_[s] < opt_.confirmations || open.count(key)) continue;
    const RankEvidence& e = *live.at(s);
    json waited = json::object();
    for (auto& [r, w] : x.waited_by) waited[std::to_string(r)] = w;
    // Its CPU and run-queue shares and its node's others' (null: unknown).
    const Shares sh = shares.count(s) ? shares.at(s) : Shares{};
    auto known = [](double v) { return v >= 0 ? json(v) : json(); };
    VerdictDraft d;
    d.kind = c3::VerdictKind::kStraggler;
    d.status = c3::VerdictStatus::kAttributed;
    d.ranks = {s};
    d.hosts = {e.node};
    d.evidence = {{"rule", rx ? "its senders wait in blocking sends for it to receive longer than for equivalent "
                                "receivers, confirmed"
                              : "its receivers wait for its messages longer than for equivalent senders', confirmed"},
                  {"type", "p2p"},
                  {"source", rx ? "p2p_late_receiver" : "p2p_late_sender"},
                  {"culprits", json::array({{{"rank", s}, {"host", e.node}, {"pid", e.pid}, {"score", score[s]},
                                             {"late_s", lateness[s]}}})},
                  {"waited_by", waited},
                  {"class_median_late_s", class_median[s]},
                  {"class_senders", class_size[s]},
                  {"step_s", step_of[s]},
                  {"guard_s", guard_of[s]},
                  {"class_spread_s", jitter_of[s]},
                  {"own_wait_s", own_of[s]},
                  {"median_own_wait_s", median_own_wait},
                  {"cpu_share", known(sh.cpu)},
                  {"others_cpu_share", known(sh.others_cpu)},
                  {"runq_share", known(sh.runq)},
                  {"others_runq_share", known(sh.others_runq)},
                  {"confirmations", confirm_[s]}};
    d.key = key;
    res.verdicts.push_back(std::move(d));
  }
  return res;
}

}  // namespace scout::scoutd
