// Every observer keeps the job's verdicts in its own node-local ledger, so
// the epilog of whichever node a verdict names finds it there. The replica
// writer takes the committed verdicts and resolutions from the deciding
// observer's down messages and commits them through the VerdictSink, in
// order, idempotently (by the verdict's stable key), retrying on the next
// round what failed. Verdicts this observer decided itself are skipped (they
// are committed already). No MPI, no threads, no SQLite.
#pragma once

#include <deque>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "scoutd/decide/verdict_sink.hpp"

namespace scout::scoutd {

class ReplicaWriter {
 public:
  // `own_prefix`: the vkey prefix of this observer's own decider.
  ReplicaWriter(VerdictSink& sink, std::string own_prefix, std::function<void(const std::string&)> log);
  // Queues the new-verdict and resolve events of a down message. Events that
  // cannot be read are counted and dropped.
  void take(const nlohmann::json& events);
  // Commits the queue in order; stops at the first failure. Returns how many.
  std::size_t flush();
  std::size_t pending() const { return queue_.size(); }
  std::size_t malformed() const { return malformed_; }

 private:
  struct Item {
    bool resolution = false;
    VerdictToCommit verdict;
    std::string vkey, at;
  };
  VerdictSink& sink_;
  std::string own_prefix_;
  std::function<void(const std::string&)> log_;
  std::deque<Item> queue_;
  std::size_t malformed_ = 0, failures_logged_ = 0;
};

}  // namespace scout::scoutd
