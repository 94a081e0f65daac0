// The epilog's and prolog's side of scout-ledgerd (see epilog_ledgerd.hpp).
#include "spank/epilog_ledgerd.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/untrusted_json.hpp"
#include "ledgerd/client.hpp"

namespace scout::spank {

using nlohmann::json;

namespace {
json request(const ledgerd::SiteConfig& ep, const json& req, std::string& why) {
  try {
    ledgerd::LedgerdClient c(ep, 10);
    json r = c.request(req);
    if (!r.value("ok", false)) why = "scout-ledgerd refused: " + r.value("error", std::string("?"));
    return r;
  } catch (const std::exception& e) {
    why = e.what();
  }
  return json::object();
}

sql::VerdictRow row_of(const json& v) {
  sql::VerdictRow r;
  r.id = v.value("id", std::int64_t{0});
  r.job_id = v.value("job", "");
  r.step = v.value("step", "");
  r.kind = v.value("kind", "");
  r.status = v.value("status", "");
  // The reply was read within depth bounds (LedgerdClient): these are safe
  // to serialise.
  auto field = [&](const char* k, json fallback) {
    return v.contains(k) && v[k].type() == fallback.type() ? v[k].dump() : fallback.dump();
  };
  r.ranks = field("ranks", json::array());
  r.hosts = field("hosts", json::array());
  r.evidence = field("evidence", json::object());
  r.detected_at = v.value("detected_at", "");
  if (v.contains("resolved_at") && v["resolved_at"].is_string()) r.resolved_at = v["resolved_at"].get<std::string>();
  if (v.contains("origin") && v["origin"].is_string()) r.origin = v["origin"].get<std::string>();
  if (v.contains("vkey") && v["vkey"].is_string()) r.vkey = v["vkey"].get<std::string>();
  if (v.contains("confirmation") && v["confirmation"].is_string()) r.confirmation = v["confirmation"].get<std::string>();
  return r;
}
}  // namespace

std::optional<EpilogLedgerd> EpilogLedgerd::from_site_config() {
  auto site = ledgerd::load_site_config();
  if (site.ledgerd.empty()) return std::nullopt;
  return EpilogLedgerd(site);
}

std::string EpilogLedgerd::submit(const std::string& job, const std::vector<sql::VerdictRow>& verdicts) {
  json batch = json::array();
  std::string why;
  for (auto& v : verdicts) {
    if (!v.vkey) continue;  // written before stable keys: the local site ledger keeps it
    // Columns from a user's spool: read within bounds.
    json o = {{"vkey", *v.vkey}, {"step", v.step}, {"kind", v.kind}, {"status", v.status},
              {"ranks", common::column_or(v.ranks, common::kListLimits, json::array())},
              {"hosts", common::column_or(v.hosts, common::kListLimits, json::array())},
              {"evidence", common::column_or(v.evidence, common::kEvidenceLimits, json::object())},
              {"detected_at", v.detected_at}};
    if (v.resolved_at) o["resolved_at"] = *v.resolved_at;
    batch.push_back(std::move(o));
    if (batch.size() == 500) {
      request(site_, {{"op", "submit"}, {"job", job}, {"verdicts", batch}}, why);
      if (!why.empty()) return why;
      batch = json::array();
    }
  }
  if (!batch.empty()) request(site_, {{"op", "submit"}, {"job", job}, {"verdicts", batch}}, why);
  return why;
}

std::string EpilogLedgerd::gating(const sql::GatingRow& g) {
  std::string why;
  request(site_, {{"op", "gating"}, {"job", g.job_id}, {"node", g.node}, {"decision", g.decision},
                {"reason", g.reason}, {"decided_by", g.decided_by},
                {"evidence", common::column_or(g.evidence, common::kEvidenceLimits, json::object())}},
          why);
  return why;
}

std::string EpilogLedgerd::job_verdicts(const std::string& job, std::vector<sql::VerdictRow>& out) {
  std::string why;
  json r = request(site_, {{"op", "query"}, {"job", job}}, why);
  if (!why.empty()) return why;
  for (auto& v : r.value("verdicts", json::array())) out.push_back(row_of(v));
  return {};
}

std::string EpilogLedgerd::node_state(const std::string& node, std::vector<sql::VerdictRow>& open,
                                      std::vector<sql::GatingRow>& clears) {
  std::string why;
  json r = request(site_, {{"op", "node"}, {"node", node}}, why);
  if (!why.empty()) return why;
  if (!r.contains("open_verdicts") || !r["open_verdicts"].is_array()) return "scout-ledgerd: node: malformed reply";
  for (auto& v : r["open_verdicts"])
    if (v.is_object()) open.push_back(row_of(v));
  if (r.contains("decisions") && r["decisions"].is_array())
    for (auto& d : r["decisions"]) {
      if (!d.is_object() || d.value("decision", "") != "clear" || d.value("node", "") != node) continue;
      sql::GatingRow g;
      g.node = node;
      g.decision = "clear";
      g.reason = d.value("reason", "");
      g.decided_by = "scout-ledgerd: " + d.value("decided_by", std::string("?"));
      g.decided_at = d.value("decided_at", "");
      if (!g.decided_at.empty()) clears.push_back(std::move(g));
    }
  return {};
}

}  // namespace scout::spank
