// scoutd's rounds (see daemon.hpp): each period a trigger round; a gather
// round when the deciding observer asks for the evidence. What goes into
// them and what is decided is the participants' (round/); here they are
// only run, in their order, and the messages encoded and decoded.
#include <algorithm>

#include <fmt/format.h>

#include "scoutd/daemon/daemon.hpp"

namespace scout::scoutd {

c3::RoundResult Daemon::round(const c3::Bytes& up, const c3::TreeRound::Combine& combine,
                              const c3::TreeRound::Decide& decide) {
  auto r = tree_->run(up, combine, decide);
  incidents_->note_lost(r.newly_lost);
  incidents_->note_membership(r);
  return r;
}

bool Daemon::period() {
  announce_ranks();
  ctx_.summary = watcher_->summary();
  wire::Trigger t{};
  t.min_seq = UINT64_MAX;
  t.stop = g_stop_signal ? 1u : 0u;
  for (auto& p : parts_) p->add_trigger(t);
  auto r = round(wire::encode_trigger(t), wire::combine_triggers,
                 [this](const wire::Bytes& acc, const std::vector<int>& lost) { return decide_trigger(acc, lost); });
  if (r.expelled) {
    // Frozen (SIGSTOP, swap, a network blip) past the deadlines: the others
    // went on without it. It asks back in from the next round on.
    log("the other observers declared this one lost; asking to rejoin");
    return !g_stop_signal;
  }
  const wire::Down down = wire::decode_down(r.down).value_or(wire::Down{});
  apply_down(down);
  if (r.complete && down.gather) gather_round();
  for (auto& p : parts_) p->end_period(r.complete, down);
  if (down.stop) return false;
  if (!r.complete && g_stop_signal) return false;  // no root to agree with
  return true;
}

void Daemon::gather_round() {
  wire::Gather g;
  g.ranks = watcher_->evidence(true);
  for (auto& p : parts_) p->add_gather(g);
  auto res = round(wire::encode_gather(g), wire::combine_gathers,
                   [this](const wire::Bytes& acc, const std::vector<int>&) { return decide_gather(acc); });
  const wire::Down down = wire::decode_down(res.down).value_or(wire::Down{});
  apply_down(down);
  for (auto& p : parts_) p->gather_done(res.complete, down);
}

wire::Bytes Daemon::decide_trigger(const wire::Bytes& acc, const std::vector<int>& lost) {
  wire::Down down;
  const auto decoded = wire::decode_trigger(acc);
  const wire::Trigger t = decoded.value_or(wire::Trigger{});
  if (decoded) down.stop = t.stop != 0;
  if (!tree_->has_quorum()) return wire::encode_down(down);  // a minority never decides
  bool trouble = !decoded || t.malformed > 0;  // what we could not read is compared in full
  if (t.malformed > 0) log(fmt::format("{} malformed trigger message(s) this round; gathering the evidence", t.malformed));
  const TriggerIn in{t, decoded.has_value(), lost};
  for (auto& p : parts_)
    if (p->decide_trigger(in, down)) trouble = true;  // every participant decides, whatever the others said
  incidents_->seal(down, &t);
  for (auto& p : parts_) p->after_commit();
  down.gather = trouble;
  return wire::encode_down(down);
}

wire::Bytes Daemon::decide_gather(const wire::Bytes& acc) {
  wire::Down down;
  if (!tree_->has_quorum()) return wire::encode_down(down);
  wire::Gather g = wire::decode_gather(acc).value_or(wire::Gather{});
  if (g.refused)
    log(fmt::format("gather: {} malformed evidence entr{} dropped", g.refused, g.refused == 1 ? "y" : "ies"));
  std::sort(g.ranks.begin(), g.ranks.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  for (auto& p : parts_) p->decide_gather(g, down);
  incidents_->seal(down, nullptr);
  return wire::encode_down(down);
}

void Daemon::apply_down(const wire::Down& down) {
  for (auto& p : parts_) p->apply_down(down);
}

}  // namespace scout::scoutd
