// The round engine (see engine.hpp).
#include "scoutd/round/engine.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace scout::scoutd {

RoundEngine::RoundEngine(RoundContext& ctx, std::unique_ptr<Incidents> desk) : ctx_(ctx), desk_(std::move(desk)) {
  order_.push_back(desk_.get());
}

RoundEngine::~RoundEngine() {
  order_.clear();
  parts_.clear();  // before the desk, which they may hold
  desk_.reset();
}

void RoundEngine::add(std::unique_ptr<Participant> p) {
  if (!p) return;
  order_.push_back(p.get());
  parts_.push_back(std::move(p));
}

void RoundEngine::note(const c3::RoundResult& r) {
  desk_->note_lost(r.newly_lost);
  desk_->note_membership(r);
}

void RoundEngine::status(nlohmann::json& base) const {
  for (auto* p : order_) p->status(base);
}

RoundEngine::Round RoundEngine::begin_period() {
  ctx_.summary = ctx_.ranks->summary();
  wire::Trigger t{};
  t.min_seq = UINT64_MAX;
  t.stop = ctx_.stopping() ? 1u : 0u;
  for (auto* p : order_) p->add_trigger(t);
  phase_ = Phase::kTrigger;
  return {wire::encode_trigger(t), wire::combine_triggers,
          [this](const wire::Bytes& acc, const std::vector<int>& lost) { return decide_trigger(acc, lost); }};
}

std::optional<RoundEngine::Round> RoundEngine::finished(const c3::RoundResult& r) {
  note(r);
  if (phase_ == Phase::kTrigger) {
    if (r.expelled) {
      // Frozen (SIGSTOP, swap, a network blip) past the deadlines: the others
      // went on without it. It asks back in from the next round on.
      ctx_.log("the other observers declared this one lost; asking to rejoin");
      phase_ = Phase::kIdle;
      go_on_ = !ctx_.stopping();
      return std::nullopt;
    }
    trigger_complete_ = r.complete;
    down_ = decode(r.down);
    apply_down(down_);
    if (r.complete && down_.gather) {
      phase_ = Phase::kGather;
      wire::Gather g;
      g.ranks = ctx_.ranks->evidence(true);
      for (auto* p : order_) p->add_gather(g);
      return Round{wire::encode_gather(g), wire::combine_gathers,
                   [this](const wire::Bytes& acc, const std::vector<int>&) { return decide_gather(acc); }};
    }
  } else if (phase_ == Phase::kGather) {
    const wire::Down gd = decode(r.down);
    apply_down(gd);
    for (auto* p : order_) p->gather_done(r.complete, gd);
  }
  end_period();
  return std::nullopt;
}

// A decision that does not decode is dropped whole (counted in the wire
// stats and logged): nothing in it is trusted.
wire::Down RoundEngine::decode(const wire::Bytes& msg) {
  std::string why;
  if (auto d = wire::decode_down(msg, &why)) return *d;
  if (!msg.empty()) ctx_.log(fmt::format("wire: a decision message was refused: expected {}", why));
  return wire::Down{};
}

void RoundEngine::end_period() {
  phase_ = Phase::kIdle;
  for (auto* p : order_) p->end_period(trigger_complete_, down_);
  go_on_ = !down_.stop && !(!trigger_complete_ && ctx_.stopping());  // stopping alone: no root to agree with
}

wire::Bytes RoundEngine::decide_trigger(const wire::Bytes& acc, const std::vector<int>& lost) {
  wire::Down down;
  const auto decoded = wire::decode_trigger(acc);
  const wire::Trigger t = decoded.value_or(wire::Trigger{});
  if (decoded) down.stop = t.stop != 0;
  if (!ctx_.tree->has_quorum()) return wire::encode_down(down);  // a minority never decides
  bool trouble = !decoded || t.malformed > 0;  // what we could not read is compared in full
  if (t.malformed > 0)
    ctx_.log(fmt::format("{} malformed trigger message(s) this round; gathering the evidence", t.malformed));
  const TriggerIn in{t, decoded.has_value(), lost};
  for (auto* p : order_)
    if (p->decide_trigger(in, down)) trouble = true;  // every participant decides, whatever the others said
  // What reads the ledger's verdicts (after_commit) runs once they are
  // committed: now, or after the gather when the commits wait for books.
  after_commit_pending_ = !desk_->seal(down, &t);
  if (!after_commit_pending_)
    for (auto* p : order_) p->after_commit();
  down.gather = trouble;
  return wire::encode_down(down);
}

wire::Bytes RoundEngine::decide_gather(const wire::Bytes& acc) {
  wire::Down down;
  if (!ctx_.tree->has_quorum()) return wire::encode_down(down);
  wire::Gather g = wire::decode_gather(acc).value_or(wire::Gather{});
  if (g.refused)
    ctx_.log(fmt::format("gather: {} malformed evidence entr{} dropped", g.refused, g.refused == 1 ? "y" : "ies"));
  std::sort(g.ranks.begin(), g.ranks.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  for (auto* p : order_) p->decide_gather(g, down);
  if (desk_->seal(down, nullptr) && after_commit_pending_)
    for (auto* p : order_) p->after_commit();
  after_commit_pending_ = false;
  return wire::encode_down(down);
}

void RoundEngine::apply_down(const wire::Down& down) {
  for (auto* p : order_) p->apply_down(down);
}

}  // namespace scout::scoutd
