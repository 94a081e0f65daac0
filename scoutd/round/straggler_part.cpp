// Stragglers as a round participant (see parts.hpp): the trigger carries
// histograms of the ranks' compute times and collective durations; the
// deciding observer asks for the evidence when the slowest stands out from
// the merged median, while a straggler incident is open (re-checked each
// gather), and every half output-signature period while ranks exchange
// point-to-point messages, or collective-only CPU ranks go on with their
// collectives (late senders, the change point).
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "common/log.hpp"
#include "libc3/verdict_rules.hpp"
#include "scoutd/detect/change_point.hpp"
#include "scoutd/detect/late_sender.hpp"
#include "scoutd/detect/straggler_detector.hpp"
#include "scoutd/round/parts.hpp"

namespace scout::scoutd {

namespace {

// Whether the largest value stands out from an estimate of the median of a
// merged histogram (the middle of its bin, within 19%) by both thresholds:
// `guard` is the absolute guard of the last comparison (the job's jitter),
// or its floor before one. A gather decides; this only asks for one.
bool stands_out(const std::uint32_t* hist, double max, double guard, double rel) {
  std::uint64_t total = 0, cum = 0;
  for (int b = 0; b < kComputeBins; ++b) total += hist[b];
  if (total < 3) return false;
  for (int b = 0; b < kComputeBins; ++b) {
    cum += hist[b];
    if (2 * cum >= total) {
      const double median = compute_bin_upper(b) / std::pow(2.0, 0.25);
      return max > median * rel && max > median + guard;
    }
  }
  return false;
}

// The rank of a "straggler:p2p:<rank>" key.
int rank_of(const std::string& key) {
  const auto colon = key.rfind(':');
  return colon == std::string::npos ? -1 : std::atoi(key.c_str() + colon + 1);
}

class Stragglers final : public Participant {
 public:
  Stragglers(RoundContext& ctx, Incidents& desk)
      : ctx_(ctx),
        desk_(desk),
        compute_({ctx.cfg.straggler_absolute_s, ctx.cfg.straggler_relative, ctx.cfg.straggler_confirmations, 4}),
        comm_({ctx.cfg.straggler_absolute_s, ctx.cfg.straggler_relative, ctx.cfg.straggler_confirmations, 4}) {}

  void add_trigger(wire::Trigger& t) override {
    const LocalSummary& s = ctx_.summary;
    t.max_compute_s = s.max_compute_s;
    t.max_comm_s = s.max_comm_s;
    std::copy(std::begin(s.compute_hist), std::end(s.compute_hist), t.compute_hist);
    std::copy(std::begin(s.comm_hist), std::end(s.comm_hist), t.comm_hist);
    t.p2p_active = s.p2p_active;
  }

  bool decide_trigger(const TriggerIn& in, wire::Down&) override {
    const auto& t = in.t;
    bool trouble = !desk_.open_or_queued("straggler").empty();  // re-checked each gather
    // The slowest rank's compute time against an upper estimate of the
    // median from the merged histogram.
    if (stands_out(t.compute_hist, t.max_compute_s, guard(compute_.last_guard()), ctx_.tun.straggler_factor) ||
        stands_out(t.comm_hist, t.max_comm_s, guard(comm_.last_guard()), ctx_.tun.straggler_factor))
      trouble = true;
    // Exchanges moved (point-to-point messages, or a collective-only CPU
    // rank's collectives): late senders and the change point compare them
    // every half outsig period.
    if (t.p2p_active > 0 && ctx_.now() - last_p2p_gather_s_ >= ctx_.tun.outsig_period_s / 2) {
      last_p2p_gather_s_ = ctx_.now();
      trouble = true;
    }
    return trouble;
  }

  void decide_gather(const wire::Gather& g, wire::Down& down) override {
    retune();
    const auto open = desk_.open_or_queued("straggler");
    // A job stuck as a whole (a strict majority of its ranks without
    // progress for the stall threshold: a hang, a held GPU) has no speed to
    // compare: its collectives' timings are the hang's, and the progress
    // rules have it. Its gathers are not fed to the collective trackers (a
    // held GPU's pipeline gave an inconclusive communication straggler
    // beside its gpu_hang).
    // Stuck means waiting too (as the progress rules see it): ranks that
    // compute longer than the threshold between collectives are not stuck.
    std::size_t live = 0, stuck = 0, waiting = 0;
    for (auto& e : g.ranks)
      if (e.attached && e.alive && !e.finalized) {
        ++live;
        if (e.stalled_s < ctx_.tun.stall_threshold_s) continue;
        ++stuck;
        waiting += e.in_collective || !e.p2p_call.empty();
      }
    const bool job_stuck = c3::strict_majority(stuck, live) && waiting > 0;
    if (!job_stuck) last_gather_s_ = ctx_.now();  // the learnt guard is fresh only from compared gathers
    CommTracker::Result ct;
    StragglerTracker::Result st;
    if (!job_stuck) {
      st = compute_.update(g.ranks, open, ctx_.now());
      ct = comm_.update(g.ranks, open, ctx_.now());
    }
    if (!st.verdicts.empty() && ctx_.cfg.replay) ctx_.compute_straggler_confirmed = true;
    auto lt = late_.update(g.ranks, ctx_.now(), open);
    auto lr = late_recv_.update(g.ranks, ctx_.now(), open);
    // A compute straggler confirmed in this very gather is the rank's one
    // incident: the change point sees its key as open.
    auto open_cp = open;
    for (auto& v : st.verdicts) open_cp.insert(v.key);
    auto cp = change_.update(g.ranks, ctx_.now(), open_cp);
    if (st.compared) down.median_compute_s = st.median_compute_s;
    for (auto* keys : {&st.resolved, &ct.resolved})
      for (auto& key : *keys) desk_.resolve(key);
    resolve_p2p(open, {{{&lt.verdicts, &lt.resolved}, {&lr.verdicts, &lr.resolved}, {&cp.verdicts, &cp.resolved}}});
    desk_.draft_all(std::move(st.verdicts));
    desk_.draft_all(std::move(lt.verdicts));
    desk_.draft_all(std::move(lr.verdicts));
    desk_.draft_all(std::move(cp.verdicts));
    desk_.draft_all(std::move(ct.verdicts));
  }

  void apply_down(const wire::Down& down) override {
    if (down.median_compute_s) median_compute_s_ = *down.median_compute_s;
  }

  // Each rank's score: its compute time over the job's median.
  void status(nlohmann::json& st) const override {
    const double median = median_compute_s_;
    st["median_compute_s"] = median;
    if (!st.contains("ranks")) return;
    for (auto& r : st["ranks"]) {
      const int steps = r.value("steps", 0);
      r["score"] = median > 0 && steps > 0 ? r.value("compute_s", 0.0) / median : 0.0;
    }
  }

 private:
  // The factor and confirmations in force (scoutctl set).
  void retune() {
    const int k = ctx_.tun.straggler_confirmations;
    compute_.options().relative = comm_.options().relative = ctx_.tun.straggler_factor;
    compute_.options().confirmations = comm_.options().confirmations = k;
    late_.options().confirmations = late_recv_.options().confirmations = change_.options().confirmations = k;
  }

  // A point-to-point straggler is one incident for the three rules (late
  // sender, late receiver, change point). A rule that never flagged the
  // rank says nothing about it (a late receiver is a prompt sender): the
  // incident is resolved once every rule that flagged the rank since it
  // opened has seen it healthy for its K windows, and none flags it now.
  // Without such a record (an incident another deciding observer opened),
  // any rule's K healthy windows resolve it while none flags it.
  using RuleOutput = std::pair<const std::vector<VerdictDraft>*, const std::vector<std::string>*>;
  void resolve_p2p(const std::set<std::string>& open, const std::array<RuleOutput, 3>& rules) {
    auto flagged = [&](unsigned i, int r) {
      return i == 0 ? late_.flagged(r) : i == 1 ? late_recv_.flagged(r) : change_.flagged(r);
    };
    auto flagged_now = [&](int r) { return flagged(0, r) || flagged(1, r) || flagged(2, r); };
    for (auto& [r, p] : p2p_)
      for (unsigned i = 0; i < 3; ++i)
        if (flagged(i, r)) p.raised |= 1u << i, p.cleared &= ~(1u << i);
    std::set<int> fresh;
    for (unsigned i = 0; i < 3; ++i)
      for (auto& v : *rules[i].first)
        if (!v.ranks.empty()) {
          p2p_[v.ranks.front()].raised |= 1u << i;
          fresh.insert(v.ranks.front());
        }
    for (unsigned i = 0; i < 3; ++i)
      for (auto& key : *rules[i].second) {
        const int r = rank_of(key);
        auto it = p2p_.find(r);
        if (it != p2p_.end()) it->second.cleared |= 1u << i;
        const bool done = it == p2p_.end() || (it->second.raised & ~it->second.cleared) == 0;
        if (!done || flagged_now(r)) continue;
        log::debug("point-to-point straggler {} resolved ({})", key,
                   i == 0 ? "late sender" : i == 1 ? "late receiver" : "change point");
        desk_.resolve(key);
        if (it != p2p_.end()) p2p_.erase(it);
      }
    // Flags that never became an incident (or whose incident is gone) are forgotten.
    for (auto it = p2p_.begin(); it != p2p_.end();)
      if (!flagged_now(it->first) && !fresh.count(it->first) && !open.count(LateSenderTracker::key_for(it->first)))
        it = p2p_.erase(it);
      else
        ++it;
  }

  // The guard the last gather learnt from the job's jitter, for a while:
  // older, the floor (the jitter may have dropped; one gather relearns it).
  double guard(double learnt) const {
    const double floor = ctx_.cfg.straggler_absolute_s;
    return learnt > 0 && ctx_.now() - last_gather_s_ < kGuardKeep_s ? std::max(floor, learnt) : floor;
  }
  static constexpr double kGuardKeep_s = 60;

  RoundContext& ctx_;
  Incidents& desk_;
  double last_gather_s_ = -1e9;
  StragglerTracker compute_;
  CommTracker comm_;
  LateSenderTracker late_;
  LateSenderTracker late_recv_{LateSenderOptions{.receivers = true}};
  struct P2pIncident {
    unsigned raised = 0, cleared = 0;  // bits: the rules that flagged it, and those that saw it healthy since
  };
  std::map<int, P2pIncident> p2p_;  // ranks some point-to-point rule flagged
  ChangePointTracker change_;
  double last_p2p_gather_s_ = 0;
  std::atomic<double> median_compute_s_{0};  // from the last gather, for scores
};

}  // namespace

std::unique_ptr<Participant> make_stragglers(RoundContext& ctx, Incidents& desk) {
  return std::make_unique<Stragglers>(ctx, desk);
}

}  // namespace scout::scoutd
