// The epilog's and prolog's side of scout-ledgerd (see epilog_ledgerd.hpp).
#include "spank/epilog_ledgerd.hpp"

#include <set>

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

// The service's verdicts, read with the one codec; a malformed one is said
// (in `why`) and left out, never guessed at.
void read_verdicts(const json& list, std::vector<common::Verdict>& out, std::string& why) {
  if (!list.is_array()) {
    why = "scout-ledgerd: malformed reply: expected a list of verdicts";
    return;
  }
  for (auto& v : list) {
    std::string w;
    if (auto d = common::verdict_from_json(v, &w)) out.push_back(std::move(*d));
    else if (why.empty()) why = "scout-ledgerd: malformed verdict left out: " + w;
  }
}
}  // namespace

std::optional<EpilogLedgerd> EpilogLedgerd::from_site_config() {
  auto site = ledgerd::load_site_config();
  if (site.ledgerd.empty()) return std::nullopt;
  return EpilogLedgerd(site);
}

std::string EpilogLedgerd::submit(const std::string& job, const std::vector<common::Verdict>& verdicts) {
  json batch = json::array();
  std::string why;
  for (auto& v : verdicts) {
    if (!v.key) continue;  // written before stable keys: the local site ledger keeps it
    json o = common::to_json(v);
    for (const char* k : {"id", "origin", "confirmation"}) o.erase(k);  // the service stamps its own
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

std::string EpilogLedgerd::job_verdicts(const std::string& job, std::vector<common::Verdict>& out) {
  std::string why;
  std::int64_t after = 0;
  for (int page = 0; page < 100000; ++page) {  // a page at a time (see ledgerd/service.hpp)
    json req = {{"op", "query"}, {"job", job}};
    if (after > 0) req["after"] = after;
    json r = request(site_, req, why);
    if (!why.empty()) return why;
    read_verdicts(r.value("verdicts", json::array()), out, why);
    if (!why.empty()) return why;
    const std::int64_t next = r.contains("after") && r["after"].is_number_integer() ? r["after"].get<std::int64_t>() : 0;
    if (!r.value("more", false) || next <= after) break;
    after = next;
  }
  return why;
}

std::string EpilogLedgerd::node_state(const std::string& node, std::vector<common::Verdict>& open,
                                      std::vector<sql::GatingRow>& clears) {
  std::string why;
  json r = request(site_, {{"op", "node"}, {"node", node}}, why);
  if (!why.empty()) return why;
  if (!r.contains("open_verdicts") || !r["open_verdicts"].is_array()) return "scout-ledgerd: node: malformed reply";
  read_verdicts(r["open_verdicts"], open, why);
  // The node's latest clear comes whole beside the page of decisions.
  json decisions = r.contains("decisions") && r["decisions"].is_array() ? r["decisions"] : json::array();
  if (r.contains("last_clear") && r["last_clear"].is_object()) decisions.push_back(r["last_clear"]);
  std::set<std::string> seen;  // the latest clear may be in the page too
  {
    for (auto& d : decisions) {
      if (!d.is_object() || d.value("decision", "") != "clear" || d.value("node", "") != node) continue;
      if (!seen.insert(d.value("decided_at", "") + "\n" + d.value("reason", "")).second) continue;
      sql::GatingRow g;
      g.node = node;
      g.decision = "clear";
      g.reason = d.value("reason", "");
      g.decided_by = "scout-ledgerd: " + d.value("decided_by", std::string("?"));
      g.decided_at = d.value("decided_at", "");
      if (!g.decided_at.empty()) clears.push_back(std::move(g));
    }
  }
  return why;
}

}  // namespace scout::spank
