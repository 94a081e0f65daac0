// Root's gating decision (see policy.hpp).
#include "gate/policy.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace scout::gate {

using nlohmann::json;

namespace {

bool listed(const std::vector<std::string>& kinds, c3::VerdictKind k) {
  return std::find(kinds.begin(), kinds.end(), c3::to_string(k)) != kinds.end();
}

std::string summary(const std::vector<std::string>& rs) {
  std::string out = "scout: " + rs.front();
  if (rs.size() > 1) out += fmt::format(" (+{} more)", rs.size() - 1);
  return out;
}

}  // namespace

std::optional<ReplayTarget> replay_target(const json& e) {
  if (!e.is_object() || e.value("source", "") != "replay") return std::nullopt;
  if (!e.contains("core") || !e["core"].is_number_integer() || !e.contains("recipe") || !e["recipe"].is_string() ||
      !e.contains("cycle") || !e["cycle"].is_number_integer())
    return std::nullopt;
  const auto core = e["core"].get<std::int64_t>();
  if (core < 0 || core > 1 << 20) return std::nullopt;
  return ReplayTarget{e["recipe"].get<std::string>(), static_cast<int>(core), e["cycle"].get<long>()};
}

Decision decide_epilog(const std::vector<common::Verdict>& verdicts, const std::string& job, const std::string& node,
                       const Settings& s, RootChecks& checks) {
  Decision d;
  std::vector<const common::Verdict*> mine;
  for (auto& v : verdicts)
    if (v.status == c3::VerdictStatus::kAttributed && listed(s.drain_kinds, v.kind) &&
        c3::evidence_class(v.kind) != c3::EvidenceClass::kNone && v.names_host(node))
      mine.push_back(&v);
  if (mine.empty()) {
    d.decision = "keep";
    d.reason = fmt::format("no attributed {} verdict on this node", fmt::join(s.drain_kinds, "/"));
    return d;
  }
  std::optional<NodeCheckResult> nc;
  auto node_check = [&]() -> const NodeCheckResult& {
    if (!nc) nc = checks.node_check();
    return *nc;
  };
  std::optional<Blame> blame;
  std::vector<std::string> suspect_kinds;
  for (auto& k : s.drain_kinds)
    if (auto kind = c3::verdict_kind_from(k); kind && c3::evidence_class(*kind) == c3::EvidenceClass::kSuspect)
      suspect_kinds.push_back(k);

  std::vector<std::string> drain_reasons, drain_why, suspect_reasons, kept_reasons;
  json verdict_ev = json::array(), confirmed = json::array(), unconfirmed = json::array();
  for (const common::Verdict* v : mine) {
    std::string ranks;
    for (auto x : v->ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(x);
    const std::string what =
        fmt::format("{} rank {} job {}", c3::to_string(v->kind), ranks.empty() ? "?" : ranks, job);
    json one = {{"verdict", v->id}, {"kind", c3::to_string(v->kind)}, {"vkey", v->key ? json(*v->key) : json(nullptr)}};
    if (c3::evidence_class(v->kind) == c3::EvidenceClass::kReproduce) {
      CheckResult rr{"reproduce", "unavailable", ""};
      if (auto t = replay_target(v->evidence)) rr = checks.reproduce(*t);
      if (rr.result == "unavailable") {
        // Collective outputs (or a device root cannot re-run): every recipe
        // on every core instead.
        const auto& n = node_check();
        rr = {"reproduce", n.failed ? "fail" : "pass",
              n.failed ? "reproduced by root's node check: " + n.failures
                       : "not reproduced: nothing to re-run as named; root's node check passed"};
      }
      one["class"] = c3::to_string(c3::EvidenceClass::kReproduce);
      one["check"] = {{"check", rr.check}, {"result", rr.result}, {"detail", rr.detail}};
      const bool reproduced = rr.result == "fail";
      if (reproduced) {
        drain_reasons.push_back(what);
        drain_why.push_back(rr.detail);
      } else {
        kept_reasons.push_back(what + " not reproduced");
      }
      if (v->key) (reproduced ? confirmed : unconfirmed).push_back(*v->key);
      d.confirmations.emplace_back(v->confirmation_key(), reproduced ? "confirmed" : "unconfirmed");
    } else {
      const auto& n = node_check();
      if (!blame) blame = checks.blame(suspect_kinds);
      one["class"] = c3::to_string(c3::EvidenceClass::kSuspect);
      if (n.failed) {
        drain_reasons.push_back(what);
        drain_why.push_back("root's node check failed: " + n.failures);
      } else if (blame->jobs >= s.blame_jobs && blame->users >= s.blame_users) {
        drain_reasons.push_back(what);
        drain_why.push_back(fmt::format("blamed by {} job(s) of {} user(s) in {:g} days (drain at {} of {})",
                                        blame->jobs, blame->users, s.blame_window_days, s.blame_jobs,
                                        s.blame_users));
      } else {
        suspect_reasons.push_back(what);
      }
    }
    verdict_ev.push_back(std::move(one));
  }
  d.evidence = {{"verdicts", verdict_ev}};
  if (nc) d.evidence["node_check"] = nc->detail;
  if (blame)
    d.evidence["blame"] = {{"jobs", blame->jobs},       {"users", blame->users},
                           {"window_days", s.blame_window_days}, {"needs_jobs", s.blame_jobs},
                           {"needs_users", s.blame_users}};
  if (!confirmed.empty()) d.evidence["confirmed"] = confirmed;
  if (!unconfirmed.empty()) d.evidence["unconfirmed"] = unconfirmed;
  if (drain_reasons.empty()) {
    const bool suspect = !suspect_reasons.empty();
    d.decision = suspect ? "suspect" : "keep";
    d.reason = suspect ? summary(suspect_reasons) +
                             fmt::format("; node suspect: root's node check passed and {} job(s) of {} user(s) "
                                         "blamed it in {:g} days (drain needs {} of {})",
                                         blame ? blame->jobs : 0, blame ? blame->users : 0, s.blame_window_days,
                                         s.blame_jobs, s.blame_users)
                       : summary(kept_reasons) + "; kept: root did not reproduce it";
    return d;
  }
  // Slurm's node reason stays short (sinfo); the decision row says why.
  d.node_reason = summary(drain_reasons);
  d.reason = d.node_reason + "; " + drain_why.front();
  d.would_act = true;
  if (!s.gate || s.dry_run) {
    d.decision = "keep";
    d.reason += s.dry_run ? " [dry run]" : " [gating off]";
    return d;
  }
  d.decision = "drain";
  d.action = Action::kDrain;
  return d;
}

Decision decide_prolog(const std::vector<common::Verdict>& open, const std::string& node, const Settings& s) {
  Decision d;
  if (open.empty()) return d;
  const auto& v = open.back();
  d.node_reason = fmt::format("scout: open {} verdict {} job {}", c3::to_string(v.kind), v.id, v.job);
  if (open.size() > 1) d.node_reason += fmt::format(" (+{} more)", open.size() - 1);
  d.node_reason += fmt::format("; scoutctl clear {} after repair", node);
  d.reason = d.node_reason;
  d.would_act = true;
  if (!s.gate || s.dry_run) {
    d.decision = "keep";
    d.reason += s.dry_run ? " [dry run]" : " [gating off]";
    return d;
  }
  d.decision = "refuse";
  d.action = Action::kDrain;
  return d;
}

std::vector<common::Verdict> prolog_open(std::vector<common::Verdict> local, const std::vector<common::Verdict>& remote,
                                         const std::string& node, const Settings& s) {
  std::set<std::string> have;
  for (auto& v : local) have.insert(v.confirmation_key());
  // The service's rows carry the confirmation recorded for this node.
  for (auto& v : remote)
    if ((s.prolog_kinds.empty() || listed(s.prolog_kinds, v.kind)) && v.confirmation &&
        *v.confirmation == "confirmed" && v.key && !have.count(*v.key) && v.names_host(node))
      local.push_back(v);
  return local;
}

std::vector<common::Verdict> job_view(std::vector<common::Verdict> local, const std::vector<common::Verdict>& remote,
                                      const std::string& job, const std::set<std::string>& allocation) {
  std::set<std::string> keys;
  for (auto& v : local)
    if (v.key) keys.insert(*v.key);
  for (auto& v : remote) {
    // Only what names nodes of this job's allocation (the service checks
    // users' submissions; this holds whoever wrote it).
    if (!v.key || keys.count(*v.key) || v.key->rfind(job + ".", 0) != 0) continue;
    if (!v.within(allocation)) continue;
    local.push_back(v);
  }
  return local;
}

}  // namespace scout::gate
