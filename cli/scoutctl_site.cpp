// scoutctl's site commands (see scoutctl.hpp): node, nodes and clear, for
// administrators, through scout-ledgerd or from the site ledger file.
#include <poll.h>
#include <sys/socket.h>
#include <termios.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include "cli/control_client.hpp"
#include "cli/scoutctl.hpp"
#include "common/spool_paths.hpp"
#include "common/untrusted_json.hpp"
#include "common/untrusted_text.hpp"
#include "common/json_num.hpp"
#include "common/slurm_nodes.hpp"
#include "ledgerd/client.hpp"
#include "ledgerd/views.hpp"
#include "ledgerd/site_config.hpp"
#include "common/options.hpp"
#include "libc3/rank_record.hpp"
#include "scoutd/wire/control_protocol.hpp"
#include "common/runtime_paths.hpp"
#include "sql/ledger.hpp"

using nlohmann::json;
namespace sd = scout::scoutd;
namespace sq = scout::sql;
namespace ld = scout::ledgerd;

namespace scout::cli {

namespace {
// One line of what root checked for a decision: "replay pass, d_state pass,
// kernel_log unavailable; blame 1 job(s) of 1 user(s) (drain needs 3 of 2)".
std::string checked_text(const json& ev) {
  if (!ev.is_object()) return {};
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (ev.contains("verdicts") && ev["verdicts"].is_array())
    for (auto& v : ev["verdicts"])
      if (v.is_object() && v.contains("check") && v["check"].is_object())
        add(fmt::format("{} {}", v["check"].value("check", "?"), v["check"].value("result", "?")));
  if (ev.contains("node_check") && ev["node_check"].is_array())
    for (auto& c : ev["node_check"])
      if (c.is_object()) add(fmt::format("{} {}", c.value("check", "?"), c.value("result", "?")));
  if (ev.contains("blame") && ev["blame"].is_object()) {
    const json& b = ev["blame"];
    out += fmt::format("; blame {} job(s) of {} user(s) in {} days (drain needs {} of {})", scout::common::json_int_or(b, "jobs", 0),
                       scout::common::json_int_or(b, "users", 0), b.value("window_days", 0.0), scout::common::json_int_or(b, "needs_jobs", 0),
                       scout::common::json_int_or(b, "needs_users", 0));
  }
  return out;
}

// The site ledger for node review; dies with exit 4 when it cannot be read.
sq::Ledger open_site_ledger(const Args& a, sq::Ledger::Mode mode) {
  std::string path = a.ledger.empty() ? scout::common::default_ledger_path() : a.ledger;
  if (::access(path.c_str(), F_OK) != 0)
    die(kExitLedger, fmt::format("{}: ledger {} does not exist (--ledger PATH or $SCOUT_LEDGER names the "
                                 "site ledger)", a.command, path));
  try {
    return sq::Ledger::open(path, mode);
  } catch (const sq::LedgerError& e) {
    die(kExitLedger, fmt::format("{}: {}", a.command, e.what()));
  }
}

}  // namespace

int cmd_node(const Args& a) {
  json open = json::array(), decisions = json::array();
  if (auto r = ask_ledgerd(a, {{"op", "node"}, {"node", a.node}})) {
    open = (*r)["open_verdicts"];
    decisions = (*r)["decisions"];
    // Older decisions a page at a time ("more", then "before": the oldest id sent).
    for (int page = 0; page < 100000 && r->value("more", false); ++page) {
      const std::int64_t before =
          r->contains("before") && (*r)["before"].is_number_integer() ? (*r)["before"].get<std::int64_t>() : 0;
      if (before <= 0) break;
      r = ask_ledgerd(a, {{"op", "node"}, {"node", a.node}, {"before", before}});
      if (!r || !(*r)["decisions"].is_array()) break;
      json older = (*r)["decisions"];
      for (auto& d : decisions) older.push_back(std::move(d));
      decisions = std::move(older);
    }
  } else {
    auto l = open_site_ledger(a, sq::Ledger::Mode::kReadOnly);
    open = sq::verdicts_json(l.open_verdicts_on(a.node, {}));
    for (auto& g : l.node_gating(a.node)) decisions.push_back(sq::gating_json(g));
  }
  if (a.json) {
    const json out = {{"node", a.node}, {"open_verdicts", open}, {"decisions", decisions}};
    std::puts(scout::common::dump_repairing_utf8(out, 2).c_str());
    return kExitOk;
  }
  if (open.empty()) std::printf("node %s: no open verdicts\n", a.node.c_str());
  else {
    std::printf("node %s: %zu open verdict(s)\n", a.node.c_str(), open.size());
    std::fputs(sd::render_verdicts_text(open).c_str(), stdout);
  }
  if (!decisions.empty()) {
    std::printf("\n%-24s  %-8s  %-9s  %-28s  %s\n", "DECIDED", "DECISION", "JOB", "BY", "REASON");
    auto str = [](const json& d, const char* k) {
      return d.contains(k) && d[k].is_string() ? sd::escape_text(d[k].get<std::string>()) : std::string("-");
    };
    for (auto& d : decisions) {
      if (!d.is_object()) continue;
      std::printf("%-24s  %-8s  %-9s  %-28s  %s\n", str(d, "decided_at").c_str(), str(d, "decision").c_str(),
                  str(d, "job").c_str(), str(d, "decided_by").c_str(), str(d, "reason").c_str());
      if (std::string c = checked_text(d.value("evidence", json::object())); !c.empty())
        std::printf("%-24s  root checked: %s\n", "", sd::escape_text(c).c_str());
    }
  }
  return kExitOk;
}

// The Slurm side of a node for `nodes`: its state and the reason in force,
// who set it, and whether it is scout's (null fields when Slurm cannot say).
void add_slurm(json& n, const std::map<std::string, scout::common::SlurmNode>& slurm) {
  auto it = slurm.find(n.value("node", ""));
  if (it == slurm.end()) {
    for (const char* k : {"slurm_state", "slurm_reason", "slurm_reason_by", "slurm_reason_at"}) n[k] = nullptr;
    n["drained_by_scout"] = nullptr;
    return;
  }
  const auto& s = it->second;
  n["slurm_state"] = s.state;
  n["slurm_reason"] = s.reason.empty() ? json(nullptr) : json(s.reason);
  n["slurm_reason_by"] = s.reason_by.empty() ? json(nullptr) : json(s.reason_by);
  n["slurm_reason_at"] = s.reason_at.empty() ? json(nullptr) : json(s.reason_at);
  n["drained_by_scout"] = (s.drain || s.down) && s.scout_reason();
}

// nodes: every node with verdicts or decisions, for administrators, with
// the state and reason Slurm holds for it now (sinfo, one call).
int cmd_nodes(const Args& a) {
  json nodes;
  if (auto r = ask_ledgerd(a, {{"op", "nodes"}})) {
    nodes = (*r)["nodes"];
    // The rest a page at a time ("more", then "after": the last node sent).
    for (int page = 0; page < 100000 && r->value("more", false) && nodes.is_array(); ++page) {
      const json after = r->value("after", json());
      if (!after.is_string()) break;
      r = ask_ledgerd(a, {{"op", "nodes"}, {"after", after}});
      if (!r || !(*r)["nodes"].is_array()) {
        std::fprintf(stderr, "scoutctl: nodes: warning: the service did not send the nodes after %s; the list is "
                             "incomplete\n", scout::common::escape_control(after.get<std::string>()).c_str());
        break;
      }
      for (auto& n : (*r)["nodes"]) nodes.push_back(std::move(n));
    }
  } else {
    auto l = open_site_ledger(a, sq::Ledger::Mode::kReadOnly);
    nodes = ld::nodes_json(l);
  }
  std::map<std::string, scout::common::SlurmNode> slurm;
  std::string why;
  if (!nodes.empty()) {
    for (auto& s : scout::common::slurm_nodes("scontrol", "", 30, &why)) slurm.emplace(s.name, s);
    if (slurm.empty() && !a.json)
      std::fprintf(stderr, "scoutctl: nodes: warning: Slurm's node states are not shown: %s\n",
                   why.empty() ? "sinfo listed no node" : scout::common::escape_control(why).c_str());
  }
  for (auto& n : nodes)
    if (n.is_object()) add_slurm(n, slurm);
  if (a.json) {
    std::puts(scout::common::dump_repairing_utf8(nodes, 2).c_str());
    return kExitOk;
  }
  if (nodes.empty()) {
    std::puts("no node has verdicts or decisions");
    return kExitOk;
  }
  std::printf("%-16s %5s %8s %9s %7s %8s  %-26s %-10s %s\n", "NODE", "OPEN", "VERD.7D", "VERD.30D", "DRAIN7D",
              "DRAIN30D", "LAST DECISION", "STATE", "REASON (SET BY)");
  auto text = [](const json& n, const char* k) {
    return n.contains(k) && n[k].is_string() ? sd::escape_text(n[k].get<std::string>()) : std::string("-");
  };
  for (auto& n : nodes) {
    if (!n.is_object()) continue;
    std::string reason = text(n, "slurm_reason");
    if (reason != "-") reason += " (" + text(n, "slurm_reason_by") + ")";
    std::printf("%-16s %5lld %8lld %9lld %7lld %8lld  %-26s %-10s %s\n", text(n, "node").c_str(),
                n.value("open_verdicts", 0LL), n.value("verdicts_7d", 0LL), n.value("verdicts_30d", 0LL),
                n.value("drains_7d", 0LL), n.value("drains_30d", 0LL),
                n["last_decision"].is_string() ? (text(n, "last_decision") + " " + text(n, "last_decided_at")).c_str()
                                               : "-",
                text(n, "slurm_state").c_str(), reason.c_str());
  }
  return kExitOk;
}

// After a clear: the node goes back to service only if scout drained it
// (common/slurm_nodes.hpp); printed, and returned for --json.
json resume_after_clear(const Args& a) {
  if (a.no_resume) return json{{"action", "none"}, {"detail", "--no-resume"}};
  std::string detail;
  const auto r = scout::common::resume_node("scontrol", a.node, 30, detail);
  using R = scout::common::ResumeOutcome;
  const char* action = r == R::kResumed ? "resumed" : r == R::kFailed ? "error" : "left";
  if (!a.json) {
    if (r == R::kResumed) std::printf("node %s: resumed in Slurm (scout had drained it)\n", a.node.c_str());
    else if (r == R::kFailed) std::fprintf(stderr, "scoutctl: clear: node %s not resumed: %s\n", a.node.c_str(),
                                           scout::common::escape_control(detail).c_str());
    else std::printf("node %s: Slurm state left as it is: %s\n", a.node.c_str(),
                     scout::common::escape_control(detail).c_str());
  }
  return json{{"action", action}, {"detail", detail}};
}

int cmd_clear(const Args& a) {
  if (a.reason.empty())
    die(kExitUsage, "clear: --reason TEXT is required (what was repaired or tested; kept for audit)");
  if (auto r = ask_ledgerd(a, {{"op", "clear"}, {"node", a.node}, {"reason", a.reason}})) {
    if (!a.json)
      std::printf("node %s: cleared %zu open verdict(s) (recorded by scout-ledgerd: %s)\n", a.node.c_str(),
                  (*r)["cleared"].size(), scout::common::escape_control(r->value("decided_by", "?")).c_str());
    (*r)["slurm"] = resume_after_clear(a);
    if (a.json) std::puts(scout::common::dump_repairing_utf8(*r, 2).c_str());
    return (*r)["slurm"]["action"] == "error" ? kExitInternal : kExitOk;
  }
  auto l = open_site_ledger(a, sq::Ledger::Mode::kReadWrite);
  auto open = l.open_verdicts_on(a.node, {});
  const char* user = std::getenv("SUDO_USER") ? std::getenv("SUDO_USER") : std::getenv("USER");
  std::string who = fmt::format("scoutctl uid {}{}", getuid(), user ? fmt::format(" ({})", user) : "");
  std::string closed;
  for (auto& v : open) closed += fmt::format("{}{} {} job {}", closed.empty() ? "" : ", ", v.kind, v.id, v.job_id);
  try {
    // Stored as valid UTF-8 (a terminal may send Latin-1; rows may hold any
    // bytes), as scout-ledgerd stores it: every reader can dump the row.
    l.insert_gating({"", a.node, "clear",
                     scout::common::repair_utf8(a.reason + (closed.empty() ? "" : " [closes " + closed + "]")),
                     scout::common::repair_utf8(who), ""});
  } catch (const sq::LedgerError& e) {
    die(kExitLedger, fmt::format("clear: {} (the site ledger is written by root)", e.what()));
  }
  if (!a.json)
    std::printf("node %s: cleared %zu open verdict(s)%s\n", a.node.c_str(), open.size(),
                closed.empty() ? "" : (" (" + scout::common::escape_control(closed) + ")").c_str());
  const json slurm = resume_after_clear(a);
  if (a.json)
    std::puts(scout::common::dump_repairing_utf8(json{{"node", a.node}, {"cleared", sq::verdicts_json(open)},
                                                      {"reason", a.reason}, {"decided_by", who}, {"slurm", slurm}},
                                                 2)
                  .c_str());
  return slurm["action"] == "error" ? kExitInternal : kExitOk;
}


}  // namespace scout::cli
