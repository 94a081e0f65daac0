// What scout-ledgerd answers from the ledger a page at a time (see
// service.hpp): a job's verdicts (query), a node's decisions and open
// verdicts (node) and the site's nodes (nodes). Every reply stays under kReplyPageBytes of rows, so no
// history makes one exceed MUNGE's 1 MiB payload.
#include <algorithm>

#include <fmt/format.h>

#include "common/ids.hpp"
#include "common/untrusted_json.hpp"
#include "common/untrusted_text.hpp"
#include "ledgerd/service.hpp"
#include "ledgerd/views.hpp"

namespace scout::ledgerd {

using nlohmann::json;

namespace {
std::string text(const json& o, const char* k) {
  return o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
}
}  // namespace

json Service::query(const Identity& who, const json& req) {
  const std::string job = text(req, "job");
  if (!common::valid_job_id(job)) return refuse("malformed", "query: expected \"job\": a decimal job id");
  // Which job of this id: the one Slurm knows, else the ledger's latest.
  // When Slurm's was submitted after the ledger's began (Slurm reused the
  // id), the earlier job's verdicts are retired first: no one, root's
  // epilog included, is shown them as this job's.
  const auto info = job_info(job);
  auto recorded = ledger_.job(job);
  if (info && recorded && renewal_due(*recorded, *info)) {
    ledger_.transaction([&] { record_job(job, info); });
    recorded = ledger_.job(job);
  }
  if (who.uid != 0 && !admin(who.uid)) {
    // The owner is Slurm's word while Slurm knows the job; the ledger's row
    // (written from Slurm's word) after that.
    std::optional<uid_t> owner;
    if (info) owner = info->uid;
    else if (recorded && recorded->uid >= 0) owner = static_cast<uid_t>(recorded->uid);
    if (!owner) return refuse("unknown_job", fmt::format("query: no job {}", job));
    if (*owner != who.uid)
      return refuse("not_owner", fmt::format("query: job {} belongs to uid {}, not to uid {}", job, *owner, who.uid));
  }
  // One page: verdicts with ids above "after", at most kReplyPageBytes of
  // them; "more" and the next "after" when the job has more.
  std::int64_t after = 0;
  if (req.contains("after")) {
    if (!req["after"].is_number_integer() || req["after"].get<std::int64_t>() < 0)
      return refuse("malformed", "query: expected \"after\": a verdict id from 0 up");
    after = req["after"].get<std::int64_t>();
  }
  json verdicts = json::array();
  std::size_t bytes = 0;
  bool more = false;
  std::int64_t last = after;
  for (auto& row : ledger_.verdicts_page(job, after, kMaxPageRows + 1)) {
    json one = sql::verdicts_json({row});
    const std::size_t size = common::dump_repairing_utf8(one).size();
    if (static_cast<int>(verdicts.size()) == kMaxPageRows || (!verdicts.empty() && bytes + size > kReplyPageBytes)) {
      more = true;
      break;
    }
    bytes += size;
    for (auto& v : one) verdicts.push_back(std::move(v));
    last = row.id;
  }
  json out = {{"ok", true}, {"job", job}, {"known", recorded.has_value()}, {"verdicts", std::move(verdicts)}};
  if (more) {
    out["more"] = true;
    out["after"] = last;
  }
  return out;
}

json Service::node(const Identity& who, const json& req) {
  if (!admin(who.uid)) return refuse("not_admin", "node: for root and administrators");
  const std::string n = text(req, "node");
  if (!common::valid_node_name(n)) return refuse("malformed", "node: expected \"node\": a node name");
  // A page of decisions, newest first from "before" (a decision id; none:
  // the newest), returned oldest first, and at most kReplyPageBytes each of
  // decisions and open verdicts; "last_clear" always (the prolog's cut).
  std::int64_t before = 0;
  if (req.contains("before")) {
    if (!req["before"].is_number_integer() || req["before"].get<std::int64_t>() < 1)
      return refuse("malformed", "node: expected \"before\": a decision id from 1 up");
    before = req["before"].get<std::int64_t>();
  }
  bool more = false;
  auto page = ledger_.node_gating_page(n, before, kMaxPageRows, &more);
  json decisions = json::array();
  std::size_t bytes = 0;
  std::int64_t oldest = 0;
  for (std::size_t i = 0; i < page.size(); ++i) {
    json g = sql::gating_json(page[i].second);
    const std::size_t size = common::dump_repairing_utf8(g).size();
    if (!decisions.empty() && bytes + size > kReplyPageBytes) {
      more = true;
      break;
    }
    bytes += size;
    decisions.push_back(std::move(g));
    oldest = page[i].first;
  }
  std::reverse(decisions.begin(), decisions.end());
  const auto open_rows = ledger_.open_verdicts_on(n, {});
  json open = json::array();
  bytes = 0;
  for (auto& row : open_rows) {
    json one = sql::verdicts_json({row});
    const std::size_t size = common::dump_repairing_utf8(one).size();
    if (bytes + size > kReplyPageBytes) break;
    bytes += size;
    for (auto& v : one) open.push_back(std::move(v));
  }
  json out = {{"ok", true}, {"node", n}, {"open_verdicts", open}, {"open_total", open_rows.size()},
              {"decisions", decisions}};
  if (const auto c = ledger_.last_clear(n)) out["last_clear"] = sql::gating_json(*c);
  if (more) {
    out["more"] = true;
    out["before"] = oldest;
  }
  return out;
}

json Service::nodes(const Identity& who, const json& req) {
  if (!admin(who.uid)) return refuse("not_admin", "nodes: for root and administrators");
  // One page of nodes in name order, after "after" (a node name): at most
  // kMaxPageRows and kReplyPageBytes, "more" and the next "after" when the
  // site has more.
  std::string after;
  if (req.contains("after")) {
    // Any text: names come from stored rows (an older scout's may not pass
    // today's name check); it is only compared with them.
    if (!req["after"].is_string() || req["after"].get_ref<const std::string&>().size() > 256)
      return refuse("malformed", "nodes: expected \"after\": the last node name of the previous page");
    after = req["after"].get<std::string>();
  }
  json page = json::array();
  std::size_t bytes = 0;
  bool more = false;
  for (auto& n : nodes_json(ledger_)) {
    const std::string name = n.value("node", "");
    if (!after.empty() && name <= after) continue;  // the ledger's order (BINARY) is byte order too
    const std::size_t size = common::dump_repairing_utf8(n).size();
    if (static_cast<int>(page.size()) == kMaxPageRows || (!page.empty() && bytes + size > kReplyPageBytes)) {
      more = true;
      break;
    }
    bytes += size;
    page.push_back(std::move(n));
  }
  json out = {{"ok", true}, {"nodes", page}};
  if (more) {
    out["more"] = true;
    out["after"] = page.back()["node"];
  }
  return out;
}

}  // namespace scout::ledgerd
