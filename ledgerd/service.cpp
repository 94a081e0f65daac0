// scout-ledgerd's request handling (see service.hpp).
#include "ledgerd/service.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "common/ids.hpp"
#include "common/untrusted_json.hpp"
#include "common/untrusted_text.hpp"
#include "ledgerd/views.hpp"
#include "common/log.hpp"
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

std::string text(const json& o, const char* k) {
  return o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
}

// A name from the password database, as the ledger stores and replies show
// it (the uid's name is NSS's word: LDAP may hold any bytes).
std::string stored_user_name(uid_t uid) { return common::storable_text(user_name(uid), kMaxNameBytes); }

// Requests are UTF-8 text, and one that is not is refused at the door
// rather than repaired: the JSON parser already refuses ill-formed
// sequences, and the refusal names the field so that the sender can be
// fixed (scout's own client repairs what it sends, see client.cpp, so a
// spool row with a stray byte is still forwarded). The field is found by
// parsing the repaired request and looking for the U+FFFD the repair put
// there, when the request held none of its own; otherwise the byte is named.
std::string ill_formed_utf8_refusal(const std::string& payload, std::size_t bad_at) {
  const std::string by_byte =
      fmt::format("request: ill-formed UTF-8 at byte {}; expected JSON text in UTF-8", bad_at);
  if (payload.find(common::kReplacementCharacter) != std::string::npos) return by_byte;
  const auto repaired = common::parse_untrusted(common::repair_utf8(payload), common::kRequestLimits);
  if (!repaired) return by_byte;
  std::vector<std::pair<const json*, std::string>> todo{{&*repaired, ""}};  // depth bounded by the parse
  while (!todo.empty()) {
    const auto [v, path] = todo.back();
    todo.pop_back();
    if (v->is_string() && v->get_ref<const std::string&>().find(common::kReplacementCharacter) != std::string::npos)
      return fmt::format("request: field {} is not valid UTF-8 (byte {}); expected UTF-8 text",
                         common::quoted(path), bad_at);
    if (v->is_array())
      for (std::size_t i = v->size(); i-- > 0;) todo.push_back({&(*v)[i], fmt::format("{}[{}]", path, i)});
    if (v->is_object())
      for (auto it = v->begin(); it != v->end(); ++it) {
        const std::string at = path.empty() ? it.key() : path + "." + it.key();
        if (it.key().find(common::kReplacementCharacter) != std::string::npos)
          return fmt::format("request: the key {} is not valid UTF-8 (byte {}); expected UTF-8 text",
                             common::quoted(at), bad_at);
        todo.push_back({&it.value(), at});
      }
  }
  return by_byte;
}

// Per request, so per thread: handle() runs one request on one thread, and
// releases the service's lock while Slurm answers, so these cannot be
// members (another request would overwrite them meanwhile).
thread_local std::unique_lock<std::mutex>* t_held = nullptr;  // handle()'s lock
thread_local std::string t_nonce;                              // echoed in the reply

const char* const kOps[] = {"ping", "submit", "query", "node", "gating", "clear", "nodes", "backlog"};
// The origin of rows root or an administrator submitted ("... uid N").
constexpr const char* kForwarded = "ledgerd: forwarded by";

}  // namespace

// Slurm's submission time against the start the ledger holds, both Slurm's
// word (a row written without it, uid -1, is adopted, never renewed: its
// start is this host's clock).
bool renewal_due(const sql::JobRow& row, const JobInfo& info) {
  return info.submitted > 0 && row.uid >= 0 && row.started_at < sql::unix_ms_to_iso(info.submitted * 1000);
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
  std::optional<JobInfo> info;
  if (t_held) t_held->unlock();  // other requests go on while Slurm answers
  try {
    info = oracle_(job);
  } catch (...) {
    if (t_held) t_held->lock();
    throw;
  }
  if (t_held) t_held->lock();
  if (jobs_.size() > 10000) jobs_.clear();  // bounded
  jobs_[job] = {info, std::chrono::steady_clock::now()};
  return info;
}

void Service::record_job(const std::string& job, const std::optional<JobInfo>& info) {
  // The job's owner is Slurm's word ("?", uid -1, when Slurm no longer knows
  // the job), never the uid of whoever wrote first (root's epilog, say).
  if (!info) {
    ledger_.insert_job_if_missing({.job_id = job, .user = "?", .uid = -1, .launcher = "slurm"});
    return;
  }
  // The job began when Slurm says it was submitted; without Slurm's word,
  // when the service first heard of it.
  const std::string submitted = info->submitted > 0 ? sql::unix_ms_to_iso(info->submitted * 1000) : std::string();
  ledger_.insert_job_if_missing({.job_id = job, .user = stored_user_name(info->uid), .uid = info->uid,
                                 .launcher = "slurm", .started_at = submitted});
  auto row = ledger_.job(job);
  if (!row) return;
  if (renewal_due(*row, *info)) {
    // Submitted after the recorded job of this id began: another job with
    // the same id. The earlier job's verdicts keep their rows under retired
    // keys (so this job's keys are free) and are no longer this job's.
    const int retired = ledger_.renew_job(job, stored_user_name(info->uid), info->uid, submitted);
    log::warning("job {}: submitted at {} by uid {}, after the job of that id recorded at {} (uid {}): Slurm reused "
                 "the id; {} verdict(s) of the earlier job kept under retired keys, no longer shown for this job",
                 job, submitted, info->uid, common::quoted(row->started_at, 40), row->uid, retired);
    return;
  }
  if (row->uid != static_cast<std::int64_t>(info->uid)) ledger_.set_job_owner(job, stored_user_name(info->uid), info->uid);
}

json Service::refuse(const std::string& reason, const std::string& message) {
  {
    std::lock_guard<std::mutex> g(counters_mu_);
    ++refused_[reason];
  }
  return {{"ok", false}, {"refused", reason}, {"error", message}};
}

json Service::handle(const Identity& who, const std::string& payload) {
  std::unique_lock<std::mutex> lk(mu_);
  t_held = &lk;
  t_nonce.clear();
  json r = handle_locked(who, payload);
  t_held = nullptr;
  if (!t_nonce.empty()) r["nonce"] = t_nonce;
  lk.unlock();  // what follows reads the reply alone
  // Every reply can be dumped: a ledger row may hold bytes that are not
  // UTF-8 (a user's spool row forwarded, a row older than this check), and
  // dump() throws on them (type_error 316), so every reply showing that row
  // would fail, and the server with it. Repaired here, once, whatever built
  // the reply.
  common::repair_json_strings(r);
  return r;
}

json Service::handle_locked(const Identity& who, const std::string& payload) {
  std::string why;
  const auto parsed = common::parse_untrusted(payload, common::kRequestLimits, &why);
  if (!parsed) {
    count_request("unknown");
    std::size_t bad_at = 0;
    if (payload.size() <= common::kRequestLimits.max_bytes && !common::valid_utf8(payload, &bad_at))
      return refuse("malformed", ill_formed_utf8_refusal(payload, bad_at));
    return refuse(payload.size() > common::kRequestLimits.max_bytes ? "too_large" : "malformed",
                  fmt::format("request: {}; expected one JSON object {{\"v\":1,\"op\":...}}", why));
  }
  const json& req = *parsed;
  if (req.is_object() && req.contains("nonce") && req["nonce"].is_string()) {
    const auto& n = req["nonce"].get_ref<const std::string&>();
    if (!n.empty() && n.size() <= 64 && n.find_first_not_of("0123456789abcdef") == std::string::npos) t_nonce = n;
  }
  if (!req.is_object()) {
    count_request("unknown");
    return refuse("malformed", fmt::format("request is {}; expected a JSON object {{\"v\":1,\"op\":...}}",
                                           common::json_type_name(req)));
  }
  if (!req.contains("v") || !req["v"].is_number_integer() || req["v"].get<std::int64_t>() != kProtocolVersion) {
    count_request("unknown");
    return refuse("version", fmt::format("protocol version {}; this scout-ledgerd speaks {}",
                                         !req.contains("v") ? std::string("missing")
                                         : req["v"].is_number_integer() ? std::to_string(req["v"].get<std::int64_t>())
                                                                        : common::json_type_name(req["v"]),
                                         kProtocolVersion));
  }
  const std::string op = text(req, "op");
  const bool known = std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
  count_request(known ? op : "unknown");
  if (!known)
    return refuse("malformed", "unknown operation; expected ping, submit, query, node, nodes, gating, clear or backlog");
  try {
    if (op == "ping")
      return {{"ok", true}, {"v", kProtocolVersion}, {"uid", who.uid}, {"user", stored_user_name(who.uid)},
              {"role", who.uid == 0 ? "root" : admin(who.uid) ? "admin" : "user"}};
    if (op == "submit") return submit(who, req);
    if (op == "query") return query(who, req);
    if (op == "node") return node(who, req);
    if (op == "gating") return gating(who, req);
    if (op == "clear") return clear(who, req);
    if (op == "backlog") return backlog(who, req);
    return nodes(who, req);
  } catch (const std::exception& e) {
    return refuse("internal", fmt::format("{} failed: {}", op, common::printable_text(e.what(), 1024)));
  }
}

json Service::submit(const Identity& who, const json& req) {
  const std::string job = text(req, "job");
  if (!common::valid_job_id(job)) return refuse("malformed", "submit: expected \"job\": a decimal job id");
  if (!req.contains("verdicts") || !req["verdicts"].is_array() || req["verdicts"].size() > kMaxVerdictsPerSubmit)
    return refuse("malformed", fmt::format("submit: expected \"verdicts\": an array of at most {}", kMaxVerdictsPerSubmit));
  const bool privileged = who.uid == 0 || admin(who.uid);
  // The job's owner and allocation are Slurm's word, never the submitter's.
  const auto info = job_info(job);
  if (!privileged) {
    if (!info) return refuse("unknown_job", fmt::format("submit: Slurm does not know job {}", job));
    if (info->uid != who.uid)
      return refuse("not_owner", fmt::format("submit: job {} belongs to uid {}, not to uid {}", job, info->uid, who.uid));
    if (!info->running) return refuse("not_running", fmt::format("submit: job {} is not running", job));
    if (info->nodes.empty())
      return refuse("unknown_job", fmt::format("submit: Slurm gave no allocation for job {}", job));
  }
  // Every verdict is checked before anything is written: one transaction.
  std::vector<sql::VerdictRow> rows;
  for (auto& v : req["verdicts"]) {
    if (!v.is_object()) return refuse("malformed", "submit: each verdict must be an object");
    // The one codec reads it; the job is the request's.
    json o = v;
    o["job"] = job;
    if (!o.contains("detected_at") || o["detected_at"].is_null()) o["detected_at"] = sql::now_iso8601();
    std::string why;
    auto d = common::verdict_from_json(o, &why);
    if (!d) return refuse(why.find("evidence of") != std::string::npos ? "too_large" : "malformed", "submit: " + why);
    const std::string vkey = d->key.value_or("");
    if (vkey.empty() || vkey.rfind(job + ".", 0) != 0 || vkey.find('@') != std::string::npos)
      return refuse("malformed", fmt::format("submit: expected \"vkey\": the verdict's key, starting with '{}.', "
                                             "without '@' (a retired key's)", job));
    // The key is the submitter's text, quoted (escaped, bounded) wherever a
    // refusal or a log line names it.
    const std::string shown_key = common::quoted(vkey);
    if (!common::valid_step_id(d->step)) return refuse("malformed", "submit: expected \"step\": a step id");
    if (!privileged) {
      if (d->hosts.size() > info->nodes.size())
        return refuse("malformed", fmt::format("submit: verdict {} names {} hosts; job {} has {} node(s)", shown_key,
                                               d->hosts.size(), job, info->nodes.size()));
      const std::set<std::string> alloc(info->nodes.begin(), info->nodes.end());
      for (auto& h : d->hosts)
        if (!alloc.count(h))
          return refuse("not_allocated", fmt::format("submit: verdict {} names {}, which is not in job {}'s "
                                                     "allocation", shown_key, h, job));
    }
    // What the submitter says of provenance, confirmation and row id is not
    // taken: the service stamps its own.
    d->id = 0;
    d->origin.reset();
    d->confirmation.reset();
    sql::VerdictRow row = sql::to_row(*d);
    rows.push_back(std::move(row));
  }
  if (!privileged &&
      ledger_.count_verdicts_from(job, who.uid) + static_cast<std::int64_t>(rows.size()) > kMaxUserVerdictsPerJob)
    return refuse("quota", fmt::format("submit: job {} would have more than {} verdicts from uid {}", job,
                                       kMaxUserVerdictsPerJob, who.uid));
  if (!privileged) {  // bytes, not only rows: one row may carry 64 KiB of evidence
    std::int64_t adding = 0;
    for (auto& r : rows)
      adding += static_cast<std::int64_t>(r.ranks.size() + r.hosts.size() + r.evidence.size() +
                                          r.vkey.value_or("").size() + r.step.size());
    const auto [n, job_bytes] = ledger_.submitted_by_job(who.uid, job);
    (void)n;
    if (job_bytes + adding > kMaxUserBytesPerJob)
      return refuse("quota", fmt::format("submit: job {} would hold more than {} bytes of verdicts from uid {}", job,
                                         kMaxUserBytesPerJob, who.uid));
    const std::string day_ago = sql::unix_ms_to_iso(sql::now_unix_ms() - 86400LL * 1000);
    if (ledger_.submitted_since(who.uid, day_ago) + adding > kMaxUserBytesPerDay)
      return refuse("quota", fmt::format("submit: uid {} would have submitted more than {} bytes of verdicts in a day",
                                         who.uid, kMaxUserBytesPerDay));
  }
  // Root's epilog forwards what the job's scoutds left: their backlogs
  // are done with.
  if (privileged) {
    std::lock_guard<std::mutex> g(counters_mu_);
    std::erase_if(backlogs_, [&](auto& b) { return b.first.first == job; });
  }
  const std::string origin = privileged ? fmt::format("{} uid {}", kForwarded, who.uid)
                                        : fmt::format("ledgerd: user-reported by uid {}", who.uid);
  int added = 0, known = 0, replaced = 0;
  json kept = json::array();
  ledger_.transaction([&] {
    record_job(job, info);
    for (auto& row : rows) {
      const auto owner = ledger_.key_owner(*row.vkey);
      if (!owner) {
        added += ledger_.import_verdict(row, origin, who.uid);
        continue;
      }
      const bool root_row = owner->confirmed_by_root || owner->origin.rfind(kForwarded, 0) == 0;
      if (privileged) {
        if (!root_row) {
          // Root's copy wins a key conflict; the user's is replaced, and
          // logged when it said something else.
          if (owner->kind != row.kind || owner->status != row.status || owner->hosts != row.hosts ||
              owner->ranks != row.ranks)
            log::warning("verdict {}: the copy of uid {} ({}) replaced by the copy forwarded by uid {}",
                         common::quoted(*row.vkey), owner->origin_uid.value_or(-1), common::quoted(owner->origin),
                         who.uid);
          ledger_.replace_verdict_by_key(row, origin, who.uid);
          ++replaced;
        } else {
          added += ledger_.import_verdict(row, origin, who.uid);  // known: takes a resolution only
          ++known;
        }
        continue;
      }
      // A user never changes a row root wrote or confirmed, nor another's.
      if (root_row || !owner->origin_uid || *owner->origin_uid != static_cast<std::int64_t>(who.uid)) {
        kept.push_back({{"vkey", *row.vkey}, {"why", root_row ? "root's row" : "another submitter's row"}});
        continue;
      }
      ledger_.import_verdict(row, origin, who.uid);  // known: may close it, never re-open it
      ++known;
    }
  });
  json out = {{"ok", true}, {"added", added}, {"known", known}};
  if (replaced) out["replaced"] = replaced;
  if (!kept.empty()) out["unchanged"] = kept;
  return out;
}

json Service::gating(const Identity& who, const json& req) {
  if (who.uid != 0) return refuse("not_root", "gating: only root (the epilog and prolog) records decisions");
  const std::string job = text(req, "job"), n = text(req, "node"), decision = text(req, "decision");
  if (!common::valid_job_id(job) || !common::valid_node_name(n))
    return refuse("malformed", "gating: expected \"job\" and \"node\"");
  if (decision != "drain" && decision != "keep" && decision != "error" && decision != "refuse" && decision != "suspect")
    return refuse("malformed", "gating: expected \"decision\": drain, suspect, keep, error or refuse");
  const json evidence = req.contains("evidence") && req["evidence"].is_object() ? req["evidence"] : json::object();
  const std::string ev = common::dump_repairing_utf8(evidence);
  if (ev.size() > kMaxEvidenceBytes)
    return refuse("too_large", fmt::format("gating: evidence of {} bytes; expected at most {}", ev.size(), kMaxEvidenceBytes));
  const auto info = job_info(job);
  // Stored cut on a character boundary: a byte cut inside a character
  // would store text that no reply showing the row could dump.
  const std::string decided_by = common::storable_text(text(req, "decided_by"), kMaxDecidedByBytes);
  const std::string reason = common::storable_text(text(req, "reason"), kMaxReasonBytes);
  ledger_.transaction([&] {
    record_job(job, info);
    ledger_.insert_gating({job, n, decision, reason, decided_by, "", ev});
    // Root's epilog on `n` says which verdicts it reproduced there (or
    // not): recorded for `n` alone; the prolog of a node refuses only on a
    // confirmation recorded for that node.
    for (const char* c : {"confirmed", "unconfirmed"})
      if (evidence.contains(c) && evidence[c].is_array())
        for (auto& k : evidence[c])
          if (k.is_string() && k.get<std::string>().size() <= 128 && k.get<std::string>().rfind(job + ".", 0) == 0)
            ledger_.confirm(k.get<std::string>(), n, c, decided_by.empty() ? "scout-ledgerd gating" : decided_by);
  });
  // Root's decision at the job's end: the job's scoutds on `n` are gone, and
  // so is their backlog report (it would alert for a day).
  {
    std::lock_guard<std::mutex> g(counters_mu_);
    backlogs_.erase({job, n});
  }
  // Retention, a few rows per decision (each an index range).
  ledger_.prune_decisions(sql::unix_ms_to_iso(sql::now_unix_ms() - kDecisionRetentionDays * 86400LL * 1000), 200);
  return {{"ok", true}};
}

json Service::clear(const Identity& who, const json& req) {
  if (!admin(who.uid)) return refuse("not_admin", "clear: for root and administrators");
  const std::string n = text(req, "node"), reason = text(req, "reason");
  if (!common::valid_node_name(n)) return refuse("malformed", "clear: expected \"node\": a node name");
  if (reason.empty()) return refuse("malformed", "clear: expected \"reason\": what was repaired or tested");
  const auto open = ledger_.open_verdicts_on(n, {});
  std::string closed;
  for (auto& v : open) closed += fmt::format("{}{} {} job {}", closed.empty() ? "" : ", ", v.kind, v.id, v.job_id);
  const std::string by = fmt::format("scout-ledgerd for uid {} ({})", who.uid, stored_user_name(who.uid));
  // The administrator's reason cut on a character boundary; the list of
  // what it closes comes from ledger rows, which may hold any bytes.
  const std::string stored = common::storable_text(reason, kMaxReasonBytes) +
                             (closed.empty() ? "" : " [closes " + common::repair_utf8(closed) + "]");
  ledger_.insert_gating({"", n, "clear", stored, by, ""});
  return {{"ok", true}, {"node", n}, {"cleared", sql::verdicts_json(open)}, {"decided_by", by}};
}

json Service::backlog(const Identity& who, const json& req) {
  const std::string job = text(req, "job"), node = text(req, "node");
  if (!common::valid_job_id(job)) return refuse("malformed", "backlog: expected \"job\": a decimal job id");
  if (!common::valid_node_name(node)) return refuse("malformed", "backlog: expected \"node\": a node name");
  if (!req.contains("pending") || !req["pending"].is_number_integer() || req["pending"].get<std::int64_t>() < 0 ||
      req["pending"].get<std::int64_t>() > 10000000)
    return refuse("malformed", "backlog: expected \"pending\": an integer from 0 to 10000000");
  if (!req.contains("oldest_s") || !req["oldest_s"].is_number() || !(req["oldest_s"].get<double>() >= 0) ||
      req["oldest_s"].get<double>() > 1e7)
    return refuse("malformed", "backlog: expected \"oldest_s\": seconds from 0 to 1e7");
  if (who.uid != 0 && !admin(who.uid)) {
    // A user reports only for her running job, and only its nodes.
    const auto info = job_info(job);
    if (!info) return refuse("unknown_job", fmt::format("backlog: Slurm does not know job {}", job));
    if (info->uid != who.uid)
      return refuse("not_owner", fmt::format("backlog: job {} belongs to uid {}, not to uid {}", job, info->uid, who.uid));
    if (!info->running) return refuse("not_running", fmt::format("backlog: job {} is not running", job));
    if (std::find(info->nodes.begin(), info->nodes.end(), node) == info->nodes.end())
      return refuse("not_allocated", fmt::format("backlog: {} is not in job {}'s allocation", node, job));
  }
  const auto now = std::chrono::steady_clock::now();
  const std::int64_t pending = req["pending"].get<std::int64_t>();
  const auto key = std::make_pair(job, node);
  std::lock_guard<std::mutex> g(counters_mu_);
  if (pending == 0) {
    backlogs_.erase(key);
  } else {
    if (!backlogs_.count(key) && backlogs_.size() >= kMaxBacklogs)
      return refuse("quota", fmt::format("backlog: {} backlogs held already", kMaxBacklogs));
    auto& b = backlogs_[key];
    b.pending = pending;
    b.oldest = now - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(req["oldest_s"].get<double>()));
    b.reported = now;
  }
  return {{"ok", true}};
}

std::map<std::string, Service::NodeBacklog> Service::backlogs(std::chrono::steady_clock::time_point now) {
  std::lock_guard<std::mutex> g(counters_mu_);
  std::erase_if(backlogs_, [&](auto& b) { return now - b.second.reported > std::chrono::hours(24); });
  std::map<std::string, NodeBacklog> out;
  for (auto& [key, b] : backlogs_) {
    auto& n = out[key.second];
    n.pending += b.pending;
    n.oldest_s = std::max(n.oldest_s, std::chrono::duration<double>(now - b.oldest).count());
  }
  return out;
}

std::map<std::string, std::uint64_t> Service::refused() const {
  std::lock_guard<std::mutex> g(counters_mu_);
  return refused_;
}

std::map<std::string, std::uint64_t> Service::requests() const {
  std::lock_guard<std::mutex> g(counters_mu_);
  return requests_;
}

void Service::count_request(const std::string& op) {
  std::lock_guard<std::mutex> g(counters_mu_);
  ++requests_[op];
}

}  // namespace scout::ledgerd
