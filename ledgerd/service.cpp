// scout-ledgerd's request handling (see service.hpp).
#include "ledgerd/service.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include <fmt/format.h>

#include "ledgerd/views.hpp"
#include "libc3/rank_record.hpp"
#include "libc3/verdict_kind.hpp"

namespace scout::ledgerd {

using nlohmann::json;

namespace {

std::string user_name(uid_t uid) {
  struct passwd pw {};
  struct passwd* out = nullptr;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &out) == 0 && out) return out->pw_name;
  return std::to_string(uid);
}

bool valid_node_name(const std::string& n) {
  return !n.empty() && n.size() <= 64 &&
         n.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == std::string::npos;
}

std::string text(const json& o, const char* k) {
  return o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
}

json verdict_json(const sql::VerdictRow& v) {
  auto parse = [](const std::string& s, json fallback) {
    json j = json::parse(s, nullptr, false);
    return j.is_discarded() ? fallback : j;
  };
  return {{"id", v.id}, {"job", v.job_id}, {"step", v.step}, {"kind", v.kind}, {"status", v.status},
          {"ranks", parse(v.ranks, json::array())}, {"hosts", parse(v.hosts, json::array())},
          {"evidence", parse(v.evidence, json::object())}, {"detected_at", v.detected_at},
          {"resolved_at", v.resolved_at ? json(*v.resolved_at) : json(nullptr)},
          {"origin", v.origin ? json(*v.origin) : json(nullptr)}, {"vkey", v.vkey ? json(*v.vkey) : json(nullptr)},
          {"confirmation", v.confirmation ? json(*v.confirmation) : json(nullptr)}};
}

}  // namespace

JobOracle scontrol_oracle(std::string scontrol) {
  return [scontrol](const std::string& job) -> std::optional<JobInfo> {
    if (!c3::valid_job_id(job)) return std::nullopt;
    const std::string cmd = scontrol + " show job " + job + " --oneliner 2>/dev/null";
    std::string out;
    if (std::FILE* p = popen(cmd.c_str(), "r")) {
      char buf[4096];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, p)) > 0 && out.size() < (1u << 20)) out.append(buf, n);
      pclose(p);
    }
    // Fields are " Key=value"; a job name can hold anything, so the fields
    // are found at word starts and the name's own field is skipped.
    auto field = [&](const std::string& key) -> std::string {
      for (std::size_t pos = 0; (pos = out.find(key + "=", pos)) != std::string::npos; pos += key.size()) {
        if (pos != 0 && out[pos - 1] != ' ') continue;
        const auto start = pos + key.size() + 1;
        return out.substr(start, out.find_first_of(" \n", start) - start);
      }
      return {};
    };
    if (field("JobId") != job) return std::nullopt;
    const std::string user = field("UserId");  // name(uid)
    const auto lp = user.rfind('('), rp = user.rfind(')');
    if (lp == std::string::npos || rp == std::string::npos || rp < lp) return std::nullopt;
    JobInfo info;
    info.uid = static_cast<uid_t>(std::strtoul(user.substr(lp + 1, rp - lp - 1).c_str(), nullptr, 10));
    const std::string state = field("JobState");
    info.running = state == "RUNNING" || state == "COMPLETING" || state == "SUSPENDED";
    return info;
  };
}

bool is_admin(const SiteConfig& cfg, uid_t uid) {
  if (uid == 0) return true;
  const std::string name = user_name(uid);
  if (std::find(cfg.admins.begin(), cfg.admins.end(), name) != cfg.admins.end()) return true;
  if (cfg.admin_groups.empty()) return false;
  struct passwd pw {};
  struct passwd* out = nullptr;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &out) != 0 || !out) return false;
  int n = 64;
  std::vector<gid_t> groups(static_cast<std::size_t>(n));
  if (getgrouplist(out->pw_name, out->pw_gid, groups.data(), &n) < 0) {
    groups.resize(static_cast<std::size_t>(n));
    getgrouplist(out->pw_name, out->pw_gid, groups.data(), &n);
  }
  groups.resize(static_cast<std::size_t>(std::max(n, 0)));
  for (gid_t g : groups) {
    struct group gr {};
    struct group* gout = nullptr;
    char gbuf[4096];
    if (getgrgid_r(g, &gr, gbuf, sizeof gbuf, &gout) == 0 && gout &&
        std::find(cfg.admin_groups.begin(), cfg.admin_groups.end(), std::string(gout->gr_name)) !=
            cfg.admin_groups.end())
      return true;
  }
  return false;
}

Service::Service(SiteConfig cfg, sql::Ledger& ledger, JobOracle oracle)
    : cfg_(std::move(cfg)), ledger_(ledger), oracle_(std::move(oracle)) {}

std::optional<JobInfo> Service::job_info(const std::string& job) {
  const auto now = std::chrono::steady_clock::now();
  auto it = jobs_.find(job);
  if (it != jobs_.end()) {
    const auto ttl = it->second.info && it->second.info->running ? std::chrono::seconds(30) : std::chrono::seconds(5);
    if (now - it->second.at < ttl) return it->second.info;
  }
  if (jobs_.size() > 10000) jobs_.clear();  // bounded
  auto info = oracle_(job);
  jobs_[job] = {info, now};
  return info;
}

json Service::refuse(const std::string& reason, const std::string& message) {
  ++refused_[reason];
  return {{"ok", false}, {"refused", reason}, {"error", message}};
}

json Service::handle(const Identity& who, const std::string& payload) {
  if (payload.size() > kMaxRequestBytes)
    return refuse("too_large", fmt::format("request of {} bytes; expected at most {}", payload.size(), kMaxRequestBytes));
  const json req = json::parse(payload, nullptr, false);
  if (!req.is_object()) return refuse("malformed", "request is not a JSON object; expected {\"v\":1,\"op\":...}");
  if (!req.contains("v") || !req["v"].is_number_integer() || req["v"].get<int>() != kProtocolVersion)
    return refuse("version", fmt::format("protocol version {}; this scout-ledgerd speaks {}",
                                         req.contains("v") ? req["v"].dump() : "missing", kProtocolVersion));
  const std::string op = text(req, "op");
  ++requests_[op.empty() ? "?" : op];
  try {
    if (op == "ping")
      return {{"ok", true}, {"v", kProtocolVersion}, {"uid", who.uid}, {"user", user_name(who.uid)},
              {"role", who.uid == 0 ? "root" : admin(who.uid) ? "admin" : "user"}};
    if (op == "submit") return submit(who, req);
    if (op == "query") return query(who, req);
    if (op == "node") return node(who, req);
    if (op == "gating") return gating(who, req);
    if (op == "clear") return clear(who, req);
    if (op == "nodes") return nodes(who);
    return refuse("malformed", fmt::format("unknown operation '{}'; expected ping, submit, query, node, nodes, gating or clear",
                                           op.substr(0, 40)));
  } catch (const std::exception& e) {
    return refuse("internal", fmt::format("{} failed: {}", op, e.what()));
  }
}

json Service::submit(const Identity& who, const json& req) {
  const std::string job = text(req, "job");
  if (!c3::valid_job_id(job)) return refuse("malformed", "submit: expected \"job\": a decimal job id");
  if (!req.contains("verdicts") || !req["verdicts"].is_array() || req["verdicts"].size() > kMaxVerdictsPerSubmit)
    return refuse("malformed", fmt::format("submit: expected \"verdicts\": an array of at most {}", kMaxVerdictsPerSubmit));
  const bool privileged = who.uid == 0 || admin(who.uid);
  // Root and administrators need no answer from Slurm (the job's owner is
  // then taken from the ledger when the job is known there).
  const auto known = ledger_.job(job);
  const auto info = privileged && known ? std::optional<JobInfo>(JobInfo{static_cast<uid_t>(known->uid), true})
                                        : job_info(job);
  if (!privileged) {
    if (!info) return refuse("unknown_job", fmt::format("submit: Slurm does not know job {}", job));
    if (info->uid != who.uid)
      return refuse("not_owner", fmt::format("submit: job {} belongs to uid {}, not to uid {}", job, info->uid, who.uid));
    if (!info->running) return refuse("not_running", fmt::format("submit: job {} is not running", job));
  }
  const uid_t owner = info ? info->uid : who.uid;
  ledger_.insert_job_if_missing({.job_id = job, .user = user_name(owner), .uid = owner, .launcher = "slurm"});
  const std::string origin = privileged ? fmt::format("ledgerd: forwarded by uid {}", who.uid)
                                        : fmt::format("ledgerd: user-reported by uid {}", who.uid);
  int added = 0;
  for (auto& v : req["verdicts"]) {
    if (!v.is_object()) return refuse("malformed", "submit: each verdict must be an object");
    sql::VerdictRow row;
    row.job_id = job;
    row.step = text(v, "step");
    row.kind = text(v, "kind");
    row.status = text(v, "status");
    const std::string vkey = text(v, "vkey");
    if (vkey.empty() || vkey.size() > 128 || vkey.rfind(job + ".", 0) != 0)
      return refuse("malformed", fmt::format("submit: expected \"vkey\": the verdict's key, starting with '{}.'", job));
    if (!c3::verdict_kind_from(row.kind) || !c3::verdict_status_from(row.status))
      return refuse("malformed", fmt::format("submit: kind '{}' status '{}'; expected one of scout's verdict kinds "
                                             "and statuses", row.kind.substr(0, 40), row.status.substr(0, 40)));
    if (!c3::valid_step_id(row.step)) return refuse("malformed", "submit: expected \"step\": a step id");
    const json ranks = v.value("ranks", json::array()), hosts = v.value("hosts", json::array());
    if (!ranks.is_array() || !hosts.is_array() || ranks.size() > 65536 || hosts.size() > 65536)
      return refuse("malformed", "submit: expected \"ranks\" and \"hosts\" arrays");
    for (auto& r : ranks)
      if (!r.is_number_integer()) return refuse("malformed", "submit: ranks must be integers");
    for (auto& h : hosts)
      if (!h.is_string() || !valid_node_name(h.get<std::string>()))
        return refuse("malformed", "submit: hosts must be node names");
    const json evidence = v.value("evidence", json::object());
    row.ranks = ranks.dump();
    row.hosts = hosts.dump();
    row.evidence = evidence.dump();
    if (row.evidence.size() > kMaxEvidenceBytes)
      return refuse("too_large", fmt::format("submit: evidence of {} bytes; expected at most {}", row.evidence.size(),
                                             kMaxEvidenceBytes));
    row.detected_at = text(v, "detected_at").substr(0, 40);
    if (row.detected_at.empty()) row.detected_at = sql::now_iso8601();
    if (const std::string r = text(v, "resolved_at"); !r.empty()) row.resolved_at = r.substr(0, 40);
    row.vkey = vkey;
    added += ledger_.import_verdict(row, origin, who.uid);
  }
  return {{"ok", true}, {"added", added}};
}

json Service::query(const Identity& who, const json& req) {
  const std::string job = text(req, "job");
  if (!c3::valid_job_id(job)) return refuse("malformed", "query: expected \"job\": a decimal job id");
  if (who.uid != 0 && !admin(who.uid)) {
    auto row = ledger_.job(job);
    std::optional<uid_t> owner;
    if (row) owner = static_cast<uid_t>(row->uid);
    else if (auto info = job_info(job)) owner = info->uid;
    if (!owner) return refuse("unknown_job", fmt::format("query: no job {}", job));
    if (*owner != who.uid)
      return refuse("not_owner", fmt::format("query: job {} belongs to uid {}, not to uid {}", job, *owner, who.uid));
  }
  json out = json::array();
  for (auto& v : ledger_.verdicts(job)) out.push_back(verdict_json(v));
  return {{"ok", true}, {"job", job}, {"known", ledger_.job(job).has_value()}, {"verdicts", out}};
}

json Service::node(const Identity& who, const json& req) {
  if (!admin(who.uid)) return refuse("not_admin", "node: for root and administrators");
  const std::string n = text(req, "node");
  if (!valid_node_name(n)) return refuse("malformed", "node: expected \"node\": a node name");
  json open = json::array(), decisions = json::array();
  for (auto& v : ledger_.open_verdicts_on(n, {})) open.push_back(verdict_json(v));
  for (auto& g : ledger_.node_gating(n))
    decisions.push_back({{"job", g.job_id.empty() ? json(nullptr) : json(g.job_id)}, {"node", g.node},
                         {"decision", g.decision}, {"reason", g.reason}, {"decided_by", g.decided_by},
                         {"evidence", json::parse(g.evidence, nullptr, false).is_discarded()
                                          ? json::object() : json::parse(g.evidence, nullptr, false)},
                         {"decided_at", g.decided_at}});
  return {{"ok", true}, {"node", n}, {"open_verdicts", open}, {"decisions", decisions}};
}

json Service::gating(const Identity& who, const json& req) {
  if (who.uid != 0) return refuse("not_root", "gating: only root (the epilog and prolog) records decisions");
  const std::string job = text(req, "job"), n = text(req, "node"), decision = text(req, "decision");
  if (!c3::valid_job_id(job) || !valid_node_name(n))
    return refuse("malformed", "gating: expected \"job\" and \"node\"");
  if (decision != "drain" && decision != "keep" && decision != "error" && decision != "refuse" && decision != "suspect")
    return refuse("malformed", "gating: expected \"decision\": drain, suspect, keep, error or refuse");
  const json evidence = req.contains("evidence") && req["evidence"].is_object() ? req["evidence"] : json::object();
  const std::string ev = evidence.dump();
  if (ev.size() > kMaxEvidenceBytes)
    return refuse("too_large", fmt::format("gating: evidence of {} bytes; expected at most {}", ev.size(), kMaxEvidenceBytes));
  ledger_.insert_job_if_missing({.job_id = job, .user = "?", .uid = 0, .launcher = "slurm"});
  ledger_.insert_gating({job, n, decision, text(req, "reason").substr(0, 4096),
                         text(req, "decided_by").substr(0, 256), "", ev});
  // Root's epilog says which verdicts it reproduced (or not): the prolog of
  // any node only refuses on confirmed ones.
  for (const char* c : {"confirmed", "unconfirmed"})
    if (evidence.contains(c) && evidence[c].is_array())
      for (auto& k : evidence[c])
        if (k.is_string() && k.get<std::string>().rfind(job + ".", 0) == 0)
          ledger_.set_confirmation_by_key(k.get<std::string>(), c);
  return {{"ok", true}};
}

json Service::clear(const Identity& who, const json& req) {
  if (!admin(who.uid)) return refuse("not_admin", "clear: for root and administrators");
  const std::string n = text(req, "node"), reason = text(req, "reason");
  if (!valid_node_name(n)) return refuse("malformed", "clear: expected \"node\": a node name");
  if (reason.empty()) return refuse("malformed", "clear: expected \"reason\": what was repaired or tested");
  const auto open = ledger_.open_verdicts_on(n, {});
  std::string closed;
  for (auto& v : open) closed += fmt::format("{}{} {} job {}", closed.empty() ? "" : ", ", v.kind, v.id, v.job_id);
  const std::string by = fmt::format("scout-ledgerd for uid {} ({})", who.uid, user_name(who.uid));
  ledger_.insert_gating({"", n, "clear", reason.substr(0, 4096) + (closed.empty() ? "" : " [closes " + closed + "]"),
                         by, ""});
  json o = json::array();
  for (auto& v : open) o.push_back(verdict_json(v));
  return {{"ok", true}, {"node", n}, {"cleared", o}, {"decided_by", by}};
}

json Service::nodes(const Identity& who) {
  if (!admin(who.uid)) return refuse("not_admin", "nodes: for root and administrators");
  return {{"ok", true}, {"nodes", nodes_json(ledger_)}};
}

}  // namespace scout::ledgerd
