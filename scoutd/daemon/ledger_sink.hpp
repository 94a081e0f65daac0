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
    sql::VerdictRow row;
    row.job_id = job_;
    row.step = step_;
    row.kind = c3::to_string(v.kind);
    row.status = c3::to_string(v.status);
    row.ranks = nlohmann::json(v.ranks).dump();
    row.hosts = nlohmann::json(v.hosts).dump();
    row.evidence = v.evidence.dump();
    row.detected_at = v.detected_at;
    if (!v.vkey.empty()) row.vkey = v.vkey;
    return ledger_.insert_verdict(row);
  }
  void commit_resolution(const std::string& vkey, const std::string& at) override {
    ledger_.resolve_verdict_by_key(vkey, at);
  }

 private:
  sql::Ledger& ledger_;
  std::string job_, step_;
};

}  // namespace scout::scoutd
