// The epilog's and prolog's side of the site ledger service: forward what a
// node's spool holds (idempotent: the verdicts' stable keys), record every
// decision, and read the job's verdicts that other nodes forwarded. Only
// used when the site configuration names a service; every call reports
// failure as a message instead of throwing, so the caller can follow
// fail_closed and log why.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/verdict.hpp"
#include "ledgerd/site_config.hpp"
#include "sql/ledger.hpp"

namespace scout::spank {

class EpilogLedgerd {
 public:
  // nullopt: no service configured. Throws only for a malformed site config.
  static std::optional<EpilogLedgerd> from_site_config();
  const ledgerd::Endpoint& endpoint() const { return site_.ledgerd; }

  // Each returns "" on success, otherwise why it failed.
  std::string submit(const std::string& job, const std::vector<common::Verdict>& verdicts);
  std::string gating(const sql::GatingRow& g);
  std::string job_verdicts(const std::string& job, std::vector<common::Verdict>& out);
  // A node's open verdicts (each with the confirmation recorded for that
  // node) and its 'clear' decisions (an administrator's clear through the
  // service must reach the node-local ledger the prolog reads).
  std::string node_state(const std::string& node, std::vector<common::Verdict>& open,
                         std::vector<sql::GatingRow>& clears);

 private:
  explicit EpilogLedgerd(ledgerd::SiteConfig site) : site_(std::move(site)) {}
  ledgerd::SiteConfig site_;
};

}  // namespace scout::spank
