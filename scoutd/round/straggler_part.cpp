// Stragglers as a round participant (see parts.hpp): the trigger carries
// histograms of the ranks' compute times and collective durations; the
// deciding observer asks for the evidence when the slowest stands out from
// the merged median, while a straggler incident is open (re-checked each
// gather), and every half output-signature period while ranks exchange
// point-to-point messages (late senders).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>

#include "common/log.hpp"
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
    // Point-to-point traffic: late senders are compared every outsig period.
    if (t.p2p_active > 0 && ctx_.now() - last_p2p_gather_s_ >= ctx_.tun.outsig_period_s / 2) {
      last_p2p_gather_s_ = ctx_.now();
      trouble = true;
    }
    return trouble;
  }

  void decide_gather(const wire::Gather& g, wire::Down& down) override {
    retune();
    last_gather_s_ = ctx_.now();
    const auto open = desk_.open_or_queued("straggler");
    auto st = compute_.update(g.ranks, open, ctx_.now());
    if (!st.verdicts.empty() && ctx_.cfg.replay) ctx_.compute_straggler_confirmed = true;
    auto ct = comm_.update(g.ranks, open);
    auto lt = late_.update(g.ranks, ctx_.now(), open);
    auto lr = late_recv_.update(g.ranks, ctx_.now(), open);
    auto cp = change_.update(g.ranks, ctx_.now(), open);
    if (st.compared) down.median_compute_s = st.median_compute_s;
    for (auto* keys : {&st.resolved, &ct.resolved})
      for (auto& key : *keys) desk_.resolve(key);
    // A point-to-point straggler is one incident for the three rules (late
    // sender, late receiver, change point): it is resolved when none flags
    // the rank any more.
    for (auto* keys : {&lt.resolved, &lr.resolved, &cp.resolved})
      for (auto& key : *keys) {
        const int r = rank_of(key);
        if (!late_.flagged(r) && !late_recv_.flagged(r) && !change_.flagged(r)) {
          log::debug("point-to-point straggler {} resolved ({})", key,
                     keys == &lt.resolved ? "late sender" : keys == &lr.resolved ? "late receiver" : "change point");
          desk_.resolve(key);
        }
      }
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
  ChangePointTracker change_;
  double last_p2p_gather_s_ = 0;
  std::atomic<double> median_compute_s_{0};  // from the last gather, for scores
};

}  // namespace

std::unique_ptr<Participant> make_stragglers(RoundContext& ctx, Incidents& desk) {
  return std::make_unique<Stragglers>(ctx, desk);
}

}  // namespace scout::scoutd
