// Where decided verdicts go: the deciding observer commits each one through
// this interface before anyone is told about it. The ledger implements it in
// the daemon (daemon/ledger_sink.hpp); tests implement it with sinks that
// fail on purpose. Nothing here knows SQLite, MPI or threads.
#pragma once

#include <cstdint>
#include <string>

#include "common/verdict.hpp"
#include "scoutd/detect/verdict_draft.hpp"

namespace scout::scoutd {

// A draft the decider accepted, stamped when it was first decided, with the
// verdict's stable key (the same row on every node and in every ledger).
struct VerdictToCommit : VerdictDraft {
  std::string detected_at;  // ISO-8601 UTC
  std::string vkey;         // <job>.<step>.o<observer>.<pid>.<sequence>
};

// The committed verdict in the one form peers and the ledger service read
// (common/verdict.hpp), and back: a peer's verdict for this node's replica
// (false: ranks outside what a rank number can be).
common::Verdict to_common(const VerdictToCommit& v, std::int64_t id, const std::string& job, const std::string& step);
bool from_common(const common::Verdict& c, VerdictToCommit& out);

class VerdictSink {
 public:
  virtual ~VerdictSink() = default;
  // Commits the verdict and returns its local id; idempotent on v.vkey (a
  // retry or a replica finds the row already there); throws on failure
  // (nothing committed, the caller retries later).
  virtual std::int64_t commit_verdict(const VerdictToCommit& v) = 0;
  // Marks the verdict with key `vkey` resolved at `at`; throws on failure.
  virtual void commit_resolution(const std::string& vkey, const std::string& at) = 0;
};

}  // namespace scout::scoutd
