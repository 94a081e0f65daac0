// The incidents desk, a participant like the others: the replicated
// incident book, the decider where the deciding observer's drafts become
// committed verdicts, the replica writer that commits the others' verdicts
// into this node's ledger, the forwarder to scout-ledgerd, and the
// observers' membership (lost, rejoined, in a minority). Participants
// propose and resolve here; seal() commits the round's queue, tells the
// forwarder and puts the events (and, after a trigger, the book's digest)
// on the down message.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "scoutd/beside/forwarder.hpp"
#include "scoutd/decide/decider.hpp"
#include "scoutd/decide/incident_book.hpp"
#include "scoutd/decide/replica_writer.hpp"
#include "scoutd/round/participant.hpp"

namespace scout::scoutd {

class Incidents final : public Participant {
 public:
  // `vkey_prefix`: see Decider. `forwarder` may be null (no ledger service).
  Incidents(RoundContext& ctx, VerdictSink& sink, const std::string& vkey_prefix,
            std::unique_ptr<Forwarder> forwarder);
  ~Incidents() override;

  // The desk (deciding observer). A gather's detector drafts are debounced
  // together (an inconclusive one must be seen in two consecutive gathers);
  // proposals (observer losses, replay verdicts) are not, and are queued
  // after them. Both are queued at seal(); resolutions at once.
  void draft(VerdictDraft d);
  void draft_all(std::vector<VerdictDraft> drafts);
  void propose(VerdictDraft d);
  void resolve(const std::string& key);
  void progress_resumed();
  std::set<std::string> open_or_queued(const std::string& prefix) const;
  // After every participant decided: queue the drafts and proposals, commit,
  // forward, and put it on `down`; after a trigger round (`t` given) also the
  // book's digest, and the whole book when an observer said it is behind.
  // False when the commits were held for the books of a gather to come.
  bool seal(wire::Down& down, const wire::Trigger* t);
  // At stop: what is still queued here is committed (no round left).
  void final_flush();

  // Membership, after every round.
  void note_lost(const std::vector<int>& newly_lost);
  void note_membership(const c3::RoundResult& r);

  // The forwarder's last chance at stop; returns what was left unsent.
  std::size_t drain_forwarder(double seconds);
  nlohmann::json verdicts_json() const;
  IncidentBook::Digest book_digest() const;

  void add_trigger(wire::Trigger& t) override;
  bool decide_trigger(const TriggerIn& in, wire::Down& down) override;
  void add_gather(wire::Gather& g) override;
  void end_period(bool complete, const wire::Down& down) override;
  void decide_gather(const wire::Gather& g, wire::Down& down) override;
  void apply_down(const wire::Down& down) override;
  void status(nlohmann::json& st) const override;

 private:
  void forward(const nlohmann::json& events);
  RoundContext& ctx_;
  std::vector<VerdictDraft> drafts_, proposals_;  // this decision's, until seal()
  mutable std::mutex mu_;  // the control thread reads the book and the round count
  IncidentBook book_;
  std::unique_ptr<Decider> decider_;
  std::unique_ptr<ReplicaWriter> replicas_;
  std::unique_ptr<Forwarder> forwarder_;
  bool forwarded_book_ = false;  // this observer forwarded its whole book once
  bool in_minority_ = false;
  bool book_behind_ = false;     // the root's digest differed from ours
  bool send_book_ = false;       // ... and the root asked for it: in the next gather
  bool hold_flush_ = false;      // deciding observer: commit after the gather's books
  bool hold_book_ = false;       // deciding observer: a book differs; send ours whole
  bool trigger_decided_ = false; // this observer decided this period's trigger
  std::string vkey_prefix_;      // this observer's decider's
  static constexpr std::size_t kMaxBookEvents = 20000;  // of the gather's book section, per decision
  std::uint64_t rounds_ = 0;
};

}  // namespace scout::scoutd
