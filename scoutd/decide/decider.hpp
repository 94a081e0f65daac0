// The decider: turns the detectors' drafts into committed verdicts at the
// deciding observer. A draft whose incident is open (or already queued) is
// dropped; the others, and resolutions, wait in a pending queue that is
// committed in order through the VerdictSink and retried on the next round
// (and at stop) until the sink accepts them. Only a committed verdict
// becomes an event on the down message and enters the incident book:
// nothing is announced before it is committed. No MPI, no threads, no SQLite.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scoutd/decide/incident_book.hpp"
#include "scoutd/decide/verdict_sink.hpp"
#include "scoutd/detect/verdict_draft.hpp"

namespace scout::scoutd {

class Decider {
 public:
  struct Hooks {
    std::function<std::string()> now_iso;          // wall-clock stamp for verdicts
    std::function<void(const std::string&)> log;   // one line, no prefix
    std::function<void(const std::string&)> warn;  // a commit failed (log when unset)
  };
  // `vkey_prefix` makes the stable keys of this decider's verdicts unique in
  // the job: <job>.<step>.o<observer>.<pid>; a sequence number follows.
  Decider(std::string job, std::string step, std::string vkey_prefix, IncidentBook& book, VerdictSink& sink,
          Hooks hooks);

  // Queues a draft unless its incident is open or queued. Inconclusive
  // drafts go through propose_all's debounce; this one records directly.
  void propose(const VerdictDraft& d);
  // One gather's drafts: inconclusive ones are debounced (seen in two
  // consecutive gathers), the others proposed.
  void propose_all(const std::vector<VerdictDraft>& drafts);
  // Queues the resolution of an open (or queued) incident.
  void resolve(const std::string& key);
  // Progress resumed everywhere: hang, stall-behind and divergence
  // incidents are resolved.
  void progress_resumed();

  // Commits the queue in order; each committed item is applied to the book
  // and appended to `events` (the down message's array). Stops at the first
  // failure and keeps it and everything after it. Returns items committed.
  std::size_t flush(nlohmann::json& events);
  std::size_t pending() const { return queue_.size(); }

  // Open incidents of kinds that detectors re-check (straggler keys), open
  // or queued, for the trackers' resolution logic.
  std::set<std::string> open_or_queued(const std::string& prefix) const;

 private:
  struct Item {
    bool resolution = false;
    std::string key;
    VerdictToCommit verdict;  // new verdicts
    std::string at;           // resolutions
  };
  bool queued_new(const std::string& key) const;
  bool queued_resolution(const std::string& key) const;

  std::string job_, step_, vkey_prefix_;
  std::uint64_t vkey_seq_ = 0;
  IncidentBook& book_;
  VerdictSink& sink_;
  Hooks hooks_;
  std::deque<Item> queue_;
  std::size_t failures_logged_ = 0;
};

// Verdict drafts that the decision layer makes itself.
struct ObserverFacts {
  int observer = -1;
  std::string node;
  int pid = 0;
  std::vector<int> ranks;  // ranks it observed, when known
};
VerdictDraft observer_lost_draft(const ObserverFacts& o, double round_timeout_s);

}  // namespace scout::scoutd
