// The incidents desk (see incidents.hpp).
#include "scoutd/round/incidents.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

#include <fmt/format.h>


namespace scout::scoutd {

using nlohmann::json;

Incidents::Incidents(RoundContext& ctx, VerdictSink& sink, const std::string& vkey_prefix,
                     std::unique_ptr<Forwarder> forwarder)
    : ctx_(ctx), forwarder_(std::move(forwarder)), vkey_prefix_(vkey_prefix) {
  decider_ = std::make_unique<Decider>(ctx_.cfg.job_id, ctx_.cfg.step_id, vkey_prefix, book_, sink,
                                       Decider::Hooks{[this] { return ctx_.now_iso(); },
                                                      [this](const std::string& m) { ctx_.log(m); },
                                                      [this](const std::string& m) { ctx_.warn(m); }});
  replicas_ = std::make_unique<ReplicaWriter>(sink, vkey_prefix, [this](const std::string& m) { ctx_.warn(m); });
}

Incidents::~Incidents() = default;

void Incidents::draft(VerdictDraft d) { drafts_.push_back(std::move(d)); }

void Incidents::draft_all(std::vector<VerdictDraft> drafts) {
  for (auto& d : drafts) drafts_.push_back(std::move(d));
}

void Incidents::propose(VerdictDraft d) { proposals_.push_back(std::move(d)); }

void Incidents::resolve(const std::string& key) {
  std::lock_guard lk(mu_);
  decider_->resolve(key);
}

void Incidents::progress_resumed() {
  std::lock_guard lk(mu_);
  decider_->progress_resumed();
}

std::set<std::string> Incidents::open_or_queued(const std::string& prefix) const {
  std::lock_guard lk(mu_);
  return decider_->open_or_queued(prefix);
}

void Incidents::forward(const json& events) {
  if (!forwarder_) return;
  if (!forwarded_book_) {  // a new deciding observer: everything it knows, once (idempotent)
    forwarded_book_ = true;
    forwarder_->take(book_.snapshot());
  }
  forwarder_->take(events);
}

bool Incidents::seal(wire::Down& down, const wire::Trigger* t) {
  std::lock_guard lk(mu_);
  if (!t) {  // a gather's drafts, debounced as one (none are drafted in a trigger decision)
    decider_->propose_all(drafts_);
    drafts_.clear();
  }
  for (auto& d : proposals_) decider_->propose(d);
  proposals_.clear();
  // A book out of step somewhere: this deciding observer may be the one
  // behind (it was frozen, or cut off, while another decided). What it
  // queued is committed after the gather brought the others' books, so it
  // never commits again what another deciding observer already did.
  // Likewise in a gather decided by an observer that did not decide this
  // period's trigger (it became the deciding observer in between, rejoining
  // as the lowest): its book was never compared; its next trigger does it.
  const bool flushed = t ? !hold_flush_ : trigger_decided_;
  if (flushed) decider_->flush(down.events);
  hold_flush_ = false;
  forward(down.events);
  if (!t) return flushed;
  // Every observer checks its book against this digest; one whose book
  // differs gets the whole book next time, and sends its own up in the
  // gather that follows (books_wanted).
  const auto d = book_.digest();
  down.book_digest = std::array<std::uint64_t, 3>{d.verdicts, d.resolved, d.hash};
  if (hold_book_) down.book = book_.snapshot();
  hold_book_ = false;
  return flushed;
}

void Incidents::final_flush() {
  // The deciding observer commits what is still queued (the others' queues
  // are empty); there is no round left to tell the others.
  std::lock_guard lk(mu_);
  if (replicas_ && replicas_->pending()) {
    const auto n = replicas_->flush();
    (replicas_->pending() ? ctx_.warn : ctx_.log)(fmt::format("at stop: {} replicated verdict(s) or resolution(s) committed, {} not", n,
                         replicas_->pending()));
  }
  // Only the deciding observer's queue is committed: another's holds what
  // it queued while it decided and left when the role moved on.
  if (decider_->pending() == 0 || !ctx_.tree->is_root()) return;
  json events = json::array();
  const auto n = decider_->flush(events);
  (decider_->pending() ? ctx_.warn : ctx_.log)(fmt::format("at stop: {} queued verdict(s) or resolution(s) committed, {} not", n, decider_->pending()));
}

void Incidents::note_lost(const std::vector<int>& newly_lost) {
  std::lock_guard lk(mu_);
  ++rounds_;
  for (int w : newly_lost) {
    book_.note_lost(w);
    ctx_.log(fmt::format("observer {} ({}) lost", w, ctx_.observers[static_cast<std::size_t>(w)].node));
  }
}

// Observers the majority took back (a frozen or cut-off scoutd that came
// back): their ranks are observed again, and their loss is resolved.
void Incidents::note_membership(const c3::RoundResult& r) {
  std::lock_guard lk(mu_);
  const auto& tree = *ctx_.tree;
  if (r.minority && r.root && tree.has_quorum()) {
    // A root whose view is a majority but that heard a minority this round
    // (a silent member took its subtree's contributions with it): it
    // decided nothing this round and applies the loss; the next one decides.
    ctx_.log(fmt::format("heard a minority of the {} observers this round (a silent subtree): deciding nothing "
                         "until the tree is rebuilt without it", ctx_.size));
    return;
  }
  if (r.minority) {
    if (!in_minority_)
      ctx_.log(fmt::format("sees {} of {} observers, no strict majority: deciding nothing and asking to rejoin",
                           tree.alive().size(), ctx_.size));
    in_minority_ = true;
    return;
  }
  for (int w : r.rejoined) {
    if (w == ctx_.me) {
      ctx_.log(fmt::format("rejoined the observers at round {} ({} of {} alive)", tree.round(), tree.alive().size(),
                           ctx_.size));
      in_minority_ = false;
      continue;
    }
    book_.note_returned(w);
    ctx_.log(fmt::format("observer {} ({}) rejoined", w, ctx_.observers[static_cast<std::size_t>(w)].node));
    if (tree.is_root()) decider_->resolve(fmt::format("observer_lost:{}", w));
  }
}

std::size_t Incidents::drain_forwarder(double seconds) {
  if (!forwarder_) return 0;
  const auto left = forwarder_->drain(seconds);
  forwarder_.reset();
  return left;
}

IncidentBook::Digest Incidents::book_digest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return book_.digest();
}

json Incidents::verdicts_json() const {
  std::lock_guard lk(mu_);
  return json(book_.verdicts());
}

void Incidents::add_trigger(wire::Trigger& t) {
  std::lock_guard lk(mu_);
  t.book_behind = book_behind_ ? 1u : 0u;
  const auto d = book_.digest();
  const std::uint64_t mine[3] = {d.verdicts, d.resolved, d.hash};
  for (int k = 0; k < 3; ++k) t.book_min[k] = t.book_max[k] = mine[k];
}

bool Incidents::decide_trigger(const TriggerIn& in, wire::Down& down) {
  std::lock_guard lk(mu_);
  trigger_decided_ = true;
  const auto d = book_.digest();
  const std::uint64_t mine[3] = {d.verdicts, d.resolved, d.hash};
  // A trigger that did not decode, or a subtree's that did not, hides its
  // books: compared as if they differed.
  bool differ = in.t.book_behind > 0 || !in.decoded || in.t.malformed > 0;
  if (in.decoded)
    for (int k = 0; k < 3; ++k) differ = differ || in.t.book_min[k] != mine[k] || in.t.book_max[k] != mine[k];
  if (differ) {
    down.books_wanted = true;
    hold_flush_ = true;
    hold_book_ = true;
  }
  std::set<int> to_record = book_.lost_unrecorded();
  to_record.insert(in.lost.begin(), in.lost.end());
  for (int w : to_record) {
    const auto& o = ctx_.observers[static_cast<std::size_t>(w)];
    std::vector<int> ranks;
    for (int r = o.first_rank; r <= o.last_rank; ++r) ranks.push_back(r);
    // Queued at once: the desk decides first, so losses go before what the
    // others resolve or propose in this decision.
    decider_->propose(observer_lost_draft({w, o.node, o.pid, ranks}, ctx_.cfg.round_timeout_s));
  }
  // An observer back among the living has no open loss, whoever saw it
  // return (a rejoin seen by another deciding observer, or in a round that
  // decided nothing, left its loss open here: found by the simulator's
  // checker, a later loss then got a second verdict).
  const auto& alive = ctx_.tree->alive();
  for (const auto& key : decider_->open_or_queued("observer_lost:")) {
    const char* first = key.data() + std::strlen("observer_lost:");
    const char* last = key.data() + key.size();
    int w = -1;
    const auto [end, ec] = std::from_chars(first, last, w);
    if (ec == std::errc() && end == last && w >= 0 && w < ctx_.size && !to_record.count(w) &&
        std::binary_search(alive.begin(), alive.end(), w))
      decider_->resolve(key);
  }
  return differ;
}

void Incidents::end_period(bool, const wire::Down&) {
  std::lock_guard lk(mu_);
  trigger_decided_ = false;
}

void Incidents::add_gather(wire::Gather& g) {
  std::lock_guard lk(mu_);
  if (!send_book_) return;
  send_book_ = false;
  for (auto& e : book_.snapshot()) g.book.push_back(std::move(e));
}

// The books of the observers out of step: what they hold that this deciding
// observer missed joins its book (and its node's ledger) before anything
// queued is committed.
void Incidents::decide_gather(const wire::Gather& g, wire::Down&) {
  if (g.book.empty()) return;
  std::lock_guard lk(mu_);
  // What the observers sent is bounded, and never a new verdict under this
  // observer's own stable keys (a peer naming the keys this decider will use
  // would make it skip its own verdicts).
  json events = json::array();
  for (auto& e : g.book) {
    if (events.size() >= kMaxBookEvents) break;
    // A new verdict under this decider's own stable keys is not theirs to
    // send (its resolution, by another deciding observer, is).
    const json* v = e.contains("verdict") && e["verdict"].is_object() ? &e["verdict"] : nullptr;
    auto vk = v ? v->find("vkey") : e.end();
    if (v && vk != v->end() && vk->is_string() &&
        vk->get_ref<const std::string&>().rfind(vkey_prefix_ + ".", 0) == 0)
      continue;
    events.push_back(e);
  }
  book_.apply(events);
  replicas_->take(events);
  replicas_->flush();
}

void Incidents::apply_down(const wire::Down& down) {
  std::lock_guard lk(mu_);
  book_.apply(down.events);
  replicas_->take(down.events);
  if (down.book) {  // catching up after a missed round
    book_.apply(*down.book);
    replicas_->take(*down.book);
  }
  if (down.book_digest) {
    const IncidentBook::Digest root{static_cast<std::size_t>((*down.book_digest)[0]),
                                    static_cast<std::size_t>((*down.book_digest)[1]), (*down.book_digest)[2]};
    book_behind_ = !(book_.digest() == root);
    send_book_ = down.books_wanted && book_behind_;
  }
  replicas_->flush();  // also retries what an earlier round could not commit
}

void Incidents::status(json& st) const {
  std::lock_guard lk(mu_);
  st["round"] = rounds_;
}

}  // namespace scout::scoutd
