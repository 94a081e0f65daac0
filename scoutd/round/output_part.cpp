// Collective-output signatures as a round participant (see parts.hpp): the
// trigger counts new signatures; the deciding observer compares them every
// output-signature period, and at stop (a corruption shortly before the end
// of a job is still named).
#include "scoutd/detect/output_tracker.hpp"
#include "scoutd/round/parts.hpp"

namespace scout::scoutd {

namespace {

class Outputs final : public Participant {
 public:
  Outputs(RoundContext& ctx, Incidents& desk) : ctx_(ctx), desk_(desk) {}

  void add_trigger(wire::Trigger& t) override { t.outsig_pending = ctx_.summary.outsig_new; }

  bool decide_trigger(const TriggerIn& in, wire::Down&) override {
    if (in.t.outsig_pending > 0 && (in.t.stop || ctx_.now() - last_gather_s_ >= ctx_.tun.outsig_period_s)) {
      last_gather_s_ = ctx_.now();
      return true;
    }
    return false;
  }

  void decide_gather(const wire::Gather& g, wire::Down&) override { desk_.draft_all(tracker_.update(g.ranks)); }

 private:
  RoundContext& ctx_;
  Incidents& desk_;
  OutputTracker tracker_;  // signed collective outputs, by call
  double last_gather_s_ = 0;
};

}  // namespace

std::unique_ptr<Participant> make_outputs(RoundContext& ctx, Incidents& desk) {
  return std::make_unique<Outputs>(ctx, desk);
}

}  // namespace scout::scoutd
