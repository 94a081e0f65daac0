// scout-epilog: Slurm epilog health gating. Runs as root on each node at the
// end of a job (as Epilog= or from a site epilog script): imports the job's
// spool ledger (written by the user's scoutds) into the root-owned site
// ledger with its provenance, then drains this node if scout attributed a
// stall, crash or sdc to it (site policy), and records the decision (who,
// when, why). Exits 0 unless the site asked for fail_closed: a scout
// problem never fails a node by itself.
//
// As scout-prolog (or with --prolog) it is the companion check at job start:
// it refuses this node (drains it and exits 1, so Slurm does not start the
// job here) while the site ledger holds an open attributed verdict of a
// prolog kind (default sdc) naming it; `scoutctl clear NODE` closes them.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/root_file.hpp"
#include "common/slurm_jobs.hpp"
#include "common/slurm_nodes.hpp"
#include "common/ids.hpp"
#include "common/spawn.hpp"
#include "common/spool_paths.hpp"
#include "common/untrusted_json.hpp"
#include "libc3/rank_record.hpp"
#include "common/log.hpp"
#include "common/options.hpp"
#include "common/verdict.hpp"
#include "gate/policy.hpp"
#include "spank/epilog_ledgerd.hpp"
#include "spank/node_check.hpp"
#include "spank/plugin_config.hpp"
#include "sql/ledger.hpp"

using nlohmann::json;
namespace sp = scout::spank;
namespace sq = scout::sql;

namespace {

struct Args {
  std::string plugstack, job, node;
  int uid = -1;
  bool dry_run = false;
  bool prolog = false;
};

std::string env(const char* n) {
  const char* v = std::getenv(n);
  return v ? v : "";
}

// Drains the node unless another tool's reason holds it (common/slurm_nodes:
// scout never replaces it; its own decision is recorded all the same).
scout::common::DrainOutcome drain_node(const sp::PluginConfig& cfg, const std::string& node, const std::string& reason,
                                       std::string& detail) {
  return scout::common::drain_node(cfg.scontrol, node, reason, 30, detail);
}

// `scontrol show hostnames LIST`: the job's nodes.
std::set<std::string> expand_nodelist(const std::string& scontrol, const std::string& list) {
  auto v = scout::common::slurm_hostnames(scontrol, list, 30);
  return {v.begin(), v.end()};
}

// The job's allocation: SLURM_JOB_NODELIST when slurmd provides it, else
// squeue's node-list field (common/slurm_jobs.hpp: fixed fields, never the
// job's record as text, where a job name can contain " NodeList="). Empty
// when neither answers; callers then trust only what names this node.
std::string job_nodelist(const std::string& scontrol, const std::string& job) {
  std::string from_env = env("SLURM_JOB_NODELIST");
  if (!from_env.empty()) return from_env;
  auto j = scout::common::slurm_job(scontrol, job, 30, nullptr, false);  // expanded by the caller
  return j ? j->nodelist : std::string();
}

// The prolog check: false refuses the node (drained here, and the prolog's
// exit status 1 keeps the job off it). Every job start on every node reads the site ledger, so the common case
// (nothing open) takes no write lock; no site ledger yet means nothing open.
// The job's allocation, as the prolog saw it while the job started: during
// the epilogs Slurm shrinks the job's NodeList as nodes finish theirs, so a
// late epilog would take verdicts naming an early node for foreign ones.
// Root-written, next to the site ledger (node-local), read and removed by
// the epilog.
// The directory of the site ledger (root's, node-local or shared).
std::string site_dir(const sp::PluginConfig& cfg) {
  const auto slash = cfg.ledger.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : cfg.ledger.substr(0, slash);
}

std::string allocation_file(const sp::PluginConfig& cfg, const std::string& job, const std::string& node) {
  return site_dir(cfg) + "/jobs/" + job + "." + node + ".nodes";  // per node: the directory may be shared
}

void remember_allocation(const sp::PluginConfig& cfg, const Args& a) {
  if (a.node.find('/') != std::string::npos) return;
  const std::string nodelist = job_nodelist(cfg.scontrol, a.job);
  if (nodelist.empty()) return;
  const std::string path = allocation_file(cfg, a.job, a.node);
  ::mkdir(path.substr(0, path.find_last_of('/')).c_str(), 0700);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    scout::log::warning("cannot record the allocation of job {} in {}: {}", a.job, path, std::strerror(errno));
    return;
  }
  const std::string line = nodelist + "\n";
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    scout::log::warning("cannot record the allocation of job {} in {}: {}", a.job, path, std::strerror(errno));
  ::close(fd);
}

// What the prolog recorded, if it ran on this node (and removes it).
std::string remembered_allocation(const sp::PluginConfig& cfg, const std::string& job, const std::string& node) {
  if (node.find('/') != std::string::npos) return {};
  const std::string path = allocation_file(cfg, job, node);
  const auto out = scout::common::read_root_file(path, 65536);
  ::unlink(path.c_str());
  return out && out->find_first_of(" \n\t") == std::string::npos ? *out : std::string();
}

// The policy's settings, from the plugstack line and the command line.
scout::gate::Settings settings(const sp::PluginConfig& cfg, const Args& a) {
  scout::gate::Settings s;
  s.drain_kinds = cfg.drain_kinds;
  s.prolog_kinds = cfg.prolog_kinds;
  s.blame_jobs = cfg.blame_jobs;
  s.blame_users = cfg.blame_users;
  s.blame_window_days = cfg.blame_window_days;
  s.gate = cfg.gate;
  s.dry_run = a.dry_run;
  return s;
}

// Root's own checks on this node, run when the policy asks for them.
class NodeChecks final : public scout::gate::RootChecks {
 public:
  NodeChecks(const sp::PluginConfig& cfg, const Args& a, sq::Ledger& site) : cfg_(cfg), site_(site) {
    nco_.node = a.node;
    nco_.dstate_wait_s = cfg.dstate_wait;
    nco_.fault_file = site_dir(cfg) + "/node-check-fault";  // test builds only (see node_check.hpp)
  }
  scout::gate::NodeCheckResult node_check() override {
    sp::NodeCheck nc;
    if (cfg_.node_check) nc = sp::run_node_check(nco_, &site_);
    else nc.checks.push_back({"node_check", "unavailable", "node_check=off in the plugstack"});
    return {nc.failed(), nc.failures(), nc.to_json()};
  }
  scout::gate::CheckResult reproduce(const scout::gate::ReplayTarget& t) override {
    const sp::CheckResult r = sp::reproduce_sdc(nco_, &site_, t.recipe, t.core, t.cycle);
    return {r.check, r.result, r.detail};
  }
  scout::gate::Blame blame(const std::vector<std::string>& kinds) override {
    const auto now = std::chrono::system_clock::now();
    const std::time_t since_t = std::chrono::system_clock::to_time_t(
        now - std::chrono::seconds(static_cast<long long>(cfg_.blame_window_days * 86400)));
    char since[32];
    std::tm tmv{};
    gmtime_r(&since_t, &tmv);
    std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    const auto b = site_.node_blame(nco_.node, kinds, since);
    return {b.jobs, b.users};
  }

 private:
  const sp::PluginConfig& cfg_;
  sq::Ledger& site_;
  sp::NodeCheckOptions nco_;
};

bool prolog(const sp::PluginConfig& cfg, const Args& a, const std::string& who) {
  remember_allocation(cfg, a);
  // The site ledger service first: an administrator's clear recorded there
  // must reach this node's ledger before it is read.
  auto service = sp::EpilogLedgerd::from_site_config();
  std::vector<scout::common::Verdict> remote;
  std::vector<sq::GatingRow> remote_clears;
  std::string service_error;
  if (service) service_error = service->node_state(a.node, remote, remote_clears);
  if (!remote_clears.empty()) {
    auto site = sq::Ledger::open(cfg.ledger, sq::Ledger::Mode::kReadWrite);
    std::string last;
    for (auto& g : site.node_gating(a.node))
      if (g.decision == "clear" && g.decided_at > last) last = g.decided_at;
    for (auto& g : remote_clears)
      if (g.decided_at > last) {
        site.insert_gating(g);
        scout::log::info("{}: clear of {} by {} taken from scout-ledgerd", a.node, g.decided_at, g.decided_by);
      }
  }
  std::vector<scout::common::Verdict> open;
  try {
    // Only verdicts root confirmed (reproduced) on this node refuse it: an
    // unchecked verdict is its job user's word.
    // An older schema (no epilog here since an upgrade) is migrated first.
    open = sq::to_verdicts(
        sq::Ledger::open(cfg.ledger, sq::Ledger::Mode::kReadCurrent).open_verdicts_on(a.node, cfg.prolog_kinds, true));
  } catch (const sq::LedgerError& e) {
    if (e.code() != sq::LedgerError::Code::kMissing) throw;
  }
  if (!service_error.empty()) {
    // An outage of the service never drains a node by itself: this node's
    // own ledger (the confirmations its epilogs recorded) decides.
    scout::log::error("scout-ledgerd: {}; deciding from this node's ledger ({} confirmed verdict(s) here){}",
                      service_error, open.size(), open.empty() ? ": admitting the job" : "");
  }
  const scout::gate::Decision d =
      scout::gate::decide_prolog(scout::gate::prolog_open(std::move(open), remote, a.node, settings(cfg, a)), a.node,
                                 settings(cfg, a));
  if (d.decision.empty()) return true;
  auto site = sq::Ledger::open(cfg.ledger, sq::Ledger::Mode::kReadWrite);
  auto record = [&](const sq::GatingRow& g) {
    site.insert_gating(g);
    if (service)
      if (auto why = service->gating(g); !why.empty()) scout::log::error("scout-ledgerd: decision not recorded: {}", why);
  };
  if (d.action != scout::gate::Action::kDrain) {
    record({a.job, a.node, d.decision, d.reason, who, ""});
    std::printf("scout-prolog: would refuse %s: %s\n", a.node.c_str(), d.node_reason.c_str());
    return true;
  }
  std::string err;
  const auto outcome = drain_node(cfg, a.node, d.node_reason, err);
  if (outcome == scout::common::DrainOutcome::kFailed)
    record({a.job, a.node, "error", d.reason + "; drain failed: " + err, who, ""});
  record({a.job, a.node, d.decision, d.reason + (outcome == scout::common::DrainOutcome::kLeft ? "; " + err : ""), who,
          ""});
  scout::log::warning("refused {} for job {}: {}", a.node, a.job, d.reason);
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (!std::getenv("PATH")) setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
  Args a;
  {
    std::string self = argv[0];
    a.prolog = self.substr(self.find_last_of('/') + 1) == "scout-prolog";
  }
  const char* prog = a.prolog ? "scout-prolog" : "scout-epilog";
  scout::opts::Table t(
      prog,
      "scout-epilog [--plugstack FILE] [--job ID] [--node NAME] [--uid UID] [--dry-run]\n"
      "       scout-epilog --prolog [--plugstack FILE] [--job ID] [--node NAME] [--dry-run]\n"
      "       scout-prolog [--plugstack FILE] [--job ID] [--node NAME] [--dry-run]",
      "Slurm epilog: import the job's scout verdicts into the site ledger and drain\n"
      "this node if scout attributed a drainable verdict (drain_kinds) to it.\n"
      "Slurm prolog (--prolog, or run as scout-prolog): refuse this node (drain it,\n"
      "exit 1) while the site ledger holds an open attributed verdict of a prolog\n"
      "kind (default sdc) naming it; `scoutctl clear NODE --reason TEXT` closes them.",
      "Defaults come from Slurm's epilog environment (SLURM_JOB_ID, SLURMD_NODENAME,\n"
      "SLURM_JOB_UID) and from the scout.so line of the plugstack file\n"
      "(--plugstack, $SCOUT_PLUGSTACK, /etc/slurm/plugstack.conf.d/scout.conf,\n"
      "/etc/slurm/plugstack.conf).\n");
  t.text("plugstack", "FILE", a.plugstack, "plugstack file with the scout.so line");
  t.text("job", "ID", a.job, "job id (default $SLURM_JOB_ID)");
  t.text("node", "NAME", a.node, "this node (default $SLURMD_NODENAME)");
  t.integer("uid", "UID", a.uid, 0, 2147483647, "the job's user (default $SLURM_JOB_UID)");
  t.flag("dry-run", a.dry_run, "decide and record, but drain nothing");
  t.flag("prolog", a.prolog, "act as scout-prolog");
  try {
    if (t.parse(argc, argv) == scout::opts::Table::Outcome::kPrinted) return 0;
  } catch (const scout::opts::ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", prog, e.what());
    return 2;
  }
  if (a.prolog) prog = "scout-prolog";
  // Root under slurmd: its stderr is not kept, so decisions also go to syslog.
  scout::log::init(prog, {true, false, true});
  if (a.job.empty()) a.job = env("SLURM_JOB_ID");
  if (a.node.empty()) a.node = env("SLURMD_NODENAME");
  if (a.uid < 0 && !env("SLURM_JOB_UID").empty()) {
    try {
      a.uid = scout::opts::parse_int("SLURM_JOB_UID", env("SLURM_JOB_UID"), 0, 2147483647);
    } catch (const scout::opts::ConfigError& e) {
      scout::log::error("{}; the spool's owner is not checked", e.what());
    }
  }

  // --- configuration: the same keys as the plugin's plugstack line --------
  sp::PluginConfig cfg;
  std::vector<std::string> candidates;
  if (!a.plugstack.empty()) candidates = {a.plugstack};
  else if (!env("SCOUT_PLUGSTACK").empty()) candidates = {env("SCOUT_PLUGSTACK")};
  else candidates = {"/etc/slurm/plugstack.conf.d/scout.conf", "/etc/slurm/plugstack.conf"};
  std::string cfg_err = "no plugstack file found";
  bool cfg_found = false;  // a scout.so line was found: its errors count
  for (auto& c : candidates) {
    std::vector<std::string> pargs;
    cfg_err = sp::read_plugstack_args(c, pargs);
    if (cfg_err.empty()) {
      cfg_found = true;
      cfg_err = sp::parse_plugin_args(pargs, cfg);
      break;
    }
  }
  auto finish = [&](bool error, const std::string& msg) {
    if (!msg.empty()) {
      if (error) scout::log::error("{}", msg);
      else scout::log::info("{}", msg);
    }
    return error && cfg.fail_closed ? 1 : 0;
  };
  // A scout.so line with a bad key is an error (logged, and fail_closed
  // decides), in production as with --plugstack: never ignored silently.
  if (!cfg_err.empty() && (cfg_found || !a.plugstack.empty())) return finish(true, "config: " + cfg_err);
  if (!scout::common::valid_job_id(a.job))
    return finish(true, fmt::format("job id '{}' is not valid; expected SLURM_JOB_ID or --job with a decimal id", a.job));
  if (a.node.empty()) return finish(true, "no node name; expected SLURMD_NODENAME or --node");

  const std::string who = fmt::format("{} uid {} on {}", prog, getuid(), a.node);
  if (a.prolog) {
    try {
      return prolog(cfg, a, who) ? 0 : 1;
    } catch (const std::exception& e) {
      return finish(true, e.what());  // a scout problem never refuses a node unless fail_closed
    }
  }
  const std::string remembered = remembered_allocation(cfg, a.job, a.node);  // read once, removed
  // The site ledger service, when the site has one: the spool's verdicts are
  // forwarded to it (idempotent), every decision is recorded there too, and
  // the decision reads the verdicts other nodes forwarded.
  std::optional<sp::EpilogLedgerd> service;
  try {
    service = sp::EpilogLedgerd::from_site_config();
  } catch (const std::exception& e) {
    return finish(true, fmt::format("site configuration: {}", e.what()));
  }
  std::string service_error;
  auto note_service = [&](const std::string& why) {
    if (!why.empty() && service_error.empty()) service_error = why;
  };
  auto unreachable = [&]() -> int {  // at the end: fail_closed decides
    if (service_error.empty()) return 0;
    scout::log::error("scout-ledgerd at {}:{}: {}{}", service->endpoint().host, service->endpoint().port,
                      service_error, cfg.fail_closed ? "; failing closed" : "; decided from this node's spool");
    return cfg.fail_closed ? 1 : 0;
  };
  try {
    auto site = sq::Ledger::open(cfg.ledger, sq::Ledger::Mode::kReadWrite);
    auto record = [&](const sq::GatingRow& g) {
      site.insert_gating(g);
      if (service) note_service(service->gating(g));
    };
    // --- import the job's spool ledger, if the job's user owns it ---------
    // The spool is a file the job's user wrote: without the job's uid there
    // is no owner to check it against, so nothing is imported (fail closed).
    // Otherwise it is never opened in place (Ledger::open_untrusted).
    // The job's allocation, as the prolog saw it (or Slurm says now);
    // unknown: only what names this node.
    const std::string nodelist = !remembered.empty() ? remembered : job_nodelist(cfg.scontrol, a.job);
    std::set<std::string> allocation = expand_nodelist(cfg.scontrol, nodelist);
    if (allocation.empty()) allocation = {a.node};
    const std::string spool = scout::common::spool_ledger(cfg.spool, a.job);
    struct stat st {};
    if (a.uid < 0) {
      record({a.job, a.node, "error",
              "SLURM_JOB_UID is not set (and no --uid): the spool ledger " + spool +
                  " cannot be checked against the job's user; nothing imported", who, ""});
      scout::log::error("job {}: SLURM_JOB_UID missing: spool {} not imported", a.job, spool);
    } else if (::lstat(spool.c_str(), &st) == 0) {
      std::optional<sq::Ledger> opened;
      try {
        opened.emplace(sq::Ledger::open_untrusted(spool, static_cast<uid_t>(a.uid)));
      } catch (const sq::LedgerError& e) {
        record({a.job, a.node, "error", std::string(e.what()) + "; not imported", who, ""});
      }
      if (opened) {
        auto& from = *opened;
        // The spool is the user's file: verdicts naming nodes outside the
        // job's allocation are not taken into the site ledger.
        const auto& nodes = allocation;
        int refused = 0;
        std::vector<scout::common::Verdict> kept;
        // Every node's spool holds the job's verdicts: the origin names the
        // node, and the verdict's stable key makes them one site row. A row
        // that does not read as a verdict (the user's file) is refused too.
        sq::Ledger::ImportDropped dropped;
        int n = site.import_job(
            from, a.job, "spool:" + a.node + ":" + spool, st.st_uid,
            [&](const sq::VerdictRow& r) {
              auto v = sq::to_verdict(r);
              if (v && v->within(nodes)) {
                kept.push_back(std::move(*v));
                return true;
              }
              ++refused;
              return false;
            },
            &dropped);
        if (n > 0) scout::log::info("imported {} verdict(s) of job {}", n, a.job);
        if (dropped.any())
          scout::log::warning("job {}: {} row(s) of {} not imported (at most {} rows per table and {} bytes per job), "
                              "{} verdict(s) imported without their evidence (over {} bytes)",
                              a.job, dropped.rows, spool, sq::Ledger::kImportMaxRows, sq::Ledger::kImportMaxBytes,
                              dropped.evidence, sq::Ledger::kImportMaxEvidenceBytes);
        if (service) note_service(service->submit(a.job, kept));  // what the scoutds could not forward
        if (refused > 0)
          record({a.job, a.node, "error",
                              fmt::format("{} verdict(s) in {} name nodes outside the job's allocation {}; "
                                          "not imported", refused, spool, nodelist), who, ""});
      }
    }
    // --- the decision (gate/policy.hpp): on the job's verdicts in the site
    // ledger and, with a service, what other nodes forwarded (this node's
    // scoutd may have died) ---------------------------------------------------
    std::vector<scout::common::Verdict> remote;
    if (service) note_service(service->job_verdicts(a.job, remote));
    NodeChecks checks(cfg, a, site);
    const auto d = scout::gate::decide_epilog(
        scout::gate::job_view(sq::to_verdicts(site.verdicts(a.job)), remote, a.job, allocation), a.job, a.node,
        settings(cfg, a), checks);
    // Root's check is recorded for this node, by the verdict's key: a row
    // from the service has the service's id, which means nothing here.
    for (auto& [key, c] : d.confirmations) site.confirm(key, a.node, c, who);
    const std::string ev = d.evidence.is_null() ? "{}" : d.evidence.dump();
    if (d.action != scout::gate::Action::kDrain) {
      record({a.job, a.node, d.decision, d.reason, who, "", ev});
      if (d.would_act) std::printf("scout-epilog: would drain %s: %s\n", a.node.c_str(), d.node_reason.c_str());
      else if (d.decision == "suspect") scout::log::info("suspect {}: {}", a.node, d.reason);
      else if (!d.evidence.is_null()) scout::log::info("kept {}: {}", a.node, d.reason);
      return unreachable();
    }
    std::string err;
    const auto outcome = drain_node(cfg, a.node, d.node_reason, err);
    if (outcome == scout::common::DrainOutcome::kFailed) {
      record({a.job, a.node, "error", d.reason + "; drain failed: " + err, who, "", ev});
      return finish(true, "drain " + a.node + ": " + err);
    }
    if (outcome == scout::common::DrainOutcome::kLeft) {
      record({a.job, a.node, "drain", d.reason + "; " + err, who, "", ev});
      scout::log::info("decided to drain {} ({}); {}", a.node, d.reason, err);
      return unreachable();
    }
    record({a.job, a.node, "drain", d.reason, who, "", ev});
    scout::log::info("drained {}: {}", a.node, d.reason);
    return unreachable();
  } catch (const std::exception& e) {
    // Every decision is recorded, a failed one too (best effort: the site
    // ledger itself may be what failed).
    try {
      sq::Ledger::open(cfg.ledger, sq::Ledger::Mode::kReadWrite)
          .insert_gating({a.job, a.node, "error", std::string("epilog failed: ") + e.what(), who, ""});
    } catch (const std::exception&) {
    }
    return finish(true, e.what());
  }
}
