// The round engine's participants. Each period scoutd runs a trigger round
// (a fixed-size reduction, wire::Trigger); when the deciding observer asks
// for it, a gather round (wire::Gather); its decision goes down to every
// observer (wire::Down). Each concern that takes part (incidents, progress
// and crashes, stragglers and late senders, output signatures, replay,
// checkpoints, GPU health, the learner) is a Participant: what it adds to
// the trigger and to a gather, what it decides at the deciding observer,
// and what it reads from the down message. The round engine (engine.hpp)
// runs the list; a participant never calls another one: what they
// share is the RoundContext (the configuration, the observers, the clock,
// this period's local summary, two flags between concerns) and the
// Incidents desk where drafts become verdicts.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/tunables.hpp"
#include "libc3/tree_round.hpp"
#include "scoutd/daemon/config.hpp"
#include "scoutd/observe/rank_watcher.hpp"
#include "scoutd/wire/peer_messages.hpp"

namespace scout::scoutd {

struct ObserverInfo {
  std::string node;
  int first_rank = 0, last_rank = -1;
  int pid = 0;
};

struct RoundContext {
  explicit RoundContext(const ScoutdConfig& c) : cfg(c) {
    tun.stall_threshold_s = c.stall_threshold_s;
    tun.straggler_factor = c.straggler_relative;
    tun.straggler_confirmations = c.straggler_confirmations;
    tun.replay_budget = c.replay_budget;
    tun.outsig_period_s = c.outsig_period_s;
    tun.learn = c.learn;
  }
  const ScoutdConfig& cfg;
  int me = 0, size = 0;
  std::vector<ObserverInfo> observers;
  RankSource* ranks = nullptr;                    // this node's ranks
  c3::TreeRound* tree = nullptr;
  std::function<double()> now;                    // seconds since start (steady)
  std::function<std::string()> now_iso;           // wall-clock stamp for verdicts
  std::function<bool()> stopping;                 // the job is ending (a signal)
  std::function<void(const std::string&)> log = [](const std::string&) {};   // what happened (info)
  // What failed and is retried or given up: a ledger or the service not
  // written (warning, so SCOUT_LOG_LEVEL=warning still shows it).
  std::function<void(const std::string&)> warn = [](const std::string&) {};
  // One more round over the observers (the learner's), losses noted.
  std::function<c3::RoundResult(const c3::Bytes&, const c3::TreeRound::Combine&, const c3::TreeRound::Decide&)>
      round;
  LocalSummary summary;                           // this period's, taken once
  std::atomic<bool> replay_demand{false};         // scoutctl replay (control thread, any observer)
  // Settings in force (scoutctl set; round/tune_part.cpp): read by the
  // participants on the main thread, written there when a down message
  // carries new ones. `tune_mu` guards the requests the control thread
  // queues and the copy `scoutctl status` reads.
  common::Tunables tun;
  struct TuneRequest {
    std::string id;      // <node>.<pid>.<n>
    long uid = -1;
    std::string user;
    std::vector<std::pair<std::string, std::string>> changes;
  };
  std::mutex tune_mu;
  std::vector<TuneRequest> tune_pending;
  nlohmann::json tune_status = nlohmann::json::object();
  // Records an adopted change in this observer's ledger (the daemon's).
  std::function<void(const nlohmann::json& applied, std::uint64_t version)> record_tune =
      [](const nlohmann::json&, std::uint64_t) {};
  bool compute_straggler_confirmed = false;       // deciding observer: is its core computing wrong?
};

// What the deciding observer reads after a trigger round.
struct TriggerIn {
  const wire::Trigger& t;
  bool decoded;                 // false: the reduction did not decode (compared in full)
  const std::vector<int>& lost; // observers lost in this round
};

class Participant {
 public:
  virtual ~Participant() = default;
  // Every observer, each period: its part of the trigger.
  virtual void add_trigger(wire::Trigger&) {}
  // The deciding observer: its part of the decision; true asks for a gather.
  virtual bool decide_trigger(const TriggerIn&, wire::Down&) { return false; }
  // The deciding observer, after a trigger decision's verdicts are
  // committed (what reads the ledger's verdicts sees this round's).
  virtual void after_commit() {}
  // Every observer, in a gather round: its part of the evidence.
  virtual void add_gather(wire::Gather&) {}
  // The deciding observer: the gathered evidence (ranks sorted by rank).
  virtual void decide_gather(const wire::Gather&, wire::Down&) {}
  // Every observer: the down message of a trigger or gather round.
  virtual void apply_down(const wire::Down&) {}
  // Every observer, after its gather round (complete: the decision arrived).
  virtual void gather_done(bool /*complete*/, const wire::Down&) {}
  // Every observer, at the end of the period (after any gather).
  virtual void end_period(bool /*complete*/, const wire::Down&) {}
  // `scoutctl status`: adds its fields (control thread: thread-safe).
  virtual void status(nlohmann::json&) const {}
};

}  // namespace scout::scoutd
