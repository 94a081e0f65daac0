// A stored verdict row read as the one verdict type (see ledger.hpp).
#include <fmt/format.h>

#include "common/untrusted_json.hpp"
#include "common/untrusted_text.hpp"
#include "sql/ledger.hpp"

namespace scout::sql {

std::optional<common::Verdict> to_verdict(const VerdictRow& r, std::string* why) {
  const auto kind = c3::verdict_kind_from(r.kind);
  const auto status = c3::verdict_status_from(r.status);
  if (!kind || !status) {
    if (why)
      *why = fmt::format("verdict {}: kind {} status {}; expected one of scout's verdict kinds and statuses", r.id,
                         common::quoted(r.kind, 40), common::quoted(r.status, 40));
    return std::nullopt;
  }
  common::Verdict v;
  std::string w;
  if (!common::read_hosts(r.hosts, v.hosts, common::kMaxVerdictHosts, &w)) {
    if (why) *why = fmt::format("verdict {}: hosts: {}", r.id, w);
    return std::nullopt;
  }
  v.id = r.id;
  v.job = r.job_id;
  v.step = r.step;
  v.kind = *kind;
  v.status = *status;
  if (!common::read_ranks(r.ranks, v.ranks, common::kMaxVerdictRanks)) v.ranks.clear();
  v.evidence = common::column_or(r.evidence, common::kEvidenceLimits, nlohmann::json::object());
  if (!v.evidence.is_object()) v.evidence = nlohmann::json::object();
  v.detected_at = r.detected_at;
  v.resolved_at = r.resolved_at;
  v.origin = r.origin;
  v.key = r.vkey;
  v.confirmation = r.confirmation;
  return v;
}

std::vector<common::Verdict> to_verdicts(const std::vector<VerdictRow>& rows, std::size_t* refused) {
  std::vector<common::Verdict> out;
  out.reserve(rows.size());
  for (auto& r : rows)
    if (auto v = to_verdict(r)) out.push_back(std::move(*v));
    else if (refused) ++*refused;
  return out;
}

VerdictRow to_row(const common::Verdict& v) {
  VerdictRow r;
  r.id = v.id;
  r.job_id = v.job;
  r.step = v.step;
  r.kind = c3::to_string(v.kind);
  r.status = c3::to_string(v.status);
  r.ranks = nlohmann::json(v.ranks).dump();
  r.hosts = nlohmann::json(v.hosts).dump();
  // Evidence may quote what a process wrote (a name, a path): stored as
  // valid UTF-8, so that every later reader can dump it again.
  r.evidence = common::dump_repairing_utf8(v.evidence);
  r.detected_at = v.detected_at;
  r.resolved_at = v.resolved_at;
  r.origin = v.origin;
  r.vkey = v.key;
  r.confirmation = v.confirmation;
  return r;
}

nlohmann::json verdicts_json(const std::vector<VerdictRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (auto& v : to_verdicts(rows)) out.push_back(common::to_json(v));
  return out;
}

nlohmann::json gating_json(const GatingRow& g) {
  using nlohmann::json;
  return {{"job", g.job_id.empty() ? json(nullptr) : json(g.job_id)},
          {"node", g.node},
          {"decision", g.decision},
          {"reason", g.reason},
          {"decided_by", g.decided_by},
          {"decided_at", g.decided_at},
          {"evidence", common::column_or(g.evidence, common::kEvidenceLimits, json::object())}};
}

}  // namespace scout::sql
