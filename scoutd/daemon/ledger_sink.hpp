// The ledger as the decider's and the replica writer's VerdictSink: one
// verdict row per stable key (committed before anyone is told), resolutions
// by key. Every scoutd writes its own node-local ledger.
#pragma once

#include "scoutd/decide/verdict_sink.hpp"
#include "sql/ledger.hpp"

namespace scout::scoutd {

class LedgerSink : public VerdictSink {
 public:
  LedgerSink(sql::Ledger& ledger, std::string job, std::string step)
      : ledger_(ledger), job_(std::move(job)), step_(std::move(step)) {}
  std::int64_t commit_verdict(const VerdictToCommit& v) override {
    common::Verdict c = to_common(v, 0, job_, step_);  // the one verdict form
    if (v.vkey.empty()) c.key.reset();
    return ledger_.insert_verdict(sql::to_row(c));
  }
  void commit_resolution(const std::string& vkey, const std::string& at) override {
    ledger_.resolve_verdict_by_key(vkey, at);
  }

 private:
  sql::Ledger& ledger_;
  std::string job_, step_;
};

}  // namespace scout::scoutd
