// The incident book: every verdict of the job and which incidents are still
// open (incident key -> verdict id), kept alike by every observer from the
// events on the round's down messages, so a new deciding observer carries on
// where a lost one stopped. Also the observer-loss bookkeeping (observers
// lost and not yet covered by a verdict) and the inconclusive debounce.
// Plain data: no MPI, no threads, no SQLite; the daemon serialises access.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::scoutd {

class IncidentBook {
 public:
  // Applies the events of a down message ({"op":"new","key","verdict"} and
  // {"op":"resolve","key","id","vkey","at"}). Idempotent: an event already
  // applied (the deciding observer applies its own on commit) changes
  // nothing. A verdict is known by its stable key (vkey: unique per deciding
  // observer and process), not by its id, which is a row of the deciding
  // node's ledger and repeats between deciders. Malformed events are
  // skipped and counted.
  void apply(const nlohmann::json& events);

  bool is_open(const std::string& key) const { return open_.count(key) != 0; }
  std::int64_t open_id(const std::string& key) const;
  // The stable key of the open incident's verdict ("" if none).
  std::string open_vkey(const std::string& key) const;
  // Keys of open incidents starting with any of `prefixes`.
  std::vector<std::string> open_keys(const std::vector<std::string>& prefixes) const;
  const std::vector<nlohmann::json>& verdicts() const { return verdicts_; }
  // How much this book holds: verdicts and resolutions, and a hash of
  // which (order-free). The deciding observer sends its digest with every
  // round; an observer whose digest differs (it missed a down message, or
  // holds what a later deciding observer missed) says so and the two books
  // are merged both ways.
  struct Digest {
    std::size_t verdicts = 0, resolved = 0;
    std::uint64_t hash = 0;
    bool operator==(const Digest&) const = default;
  };
  Digest digest() const;
  // The events that rebuild this book (and every node's ledger rows).
  nlohmann::json snapshot() const;
  std::size_t malformed_events() const { return malformed_; }

  // Observers that missed a round: each gets one observer_lost verdict.
  void note_lost(int observer) { lost_unrecorded_.insert(observer); }
  // It came back before its loss was recorded: nothing to record.
  void note_returned(int observer) { lost_unrecorded_.erase(observer); }
  const std::set<int>& lost_unrecorded() const { return lost_unrecorded_; }

  // Inconclusive drafts name nobody, so one must be seen in `needed`
  // consecutive gathers before it is recorded (a snapshot taken while
  // progress resumes is not reported). Call once per gather with the keys
  // of that gather's inconclusive drafts; returns those seen often enough.
  std::set<std::string> debounce_inconclusive(const std::vector<std::string>& keys, int needed = 2);

 private:
  std::vector<nlohmann::json> verdicts_;
  std::set<std::string> idents_;                  // vkey, or "id:<id>" without one
  std::map<std::string, std::string> key_of_ident_;
  struct Open {
    std::int64_t id = 0;
    std::string vkey;
  };
  std::map<std::string, Open> open_;
  std::set<int> lost_unrecorded_;
  std::map<std::string, int> inconclusive_seen_;
  std::size_t malformed_ = 0;
};

}  // namespace scout::scoutd
