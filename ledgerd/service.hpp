// scout-ledgerd's requests and who may make them, without sockets: the
// server hands each decoded request (the JSON payload of a MUNGE credential
// and the uid/gid MUNGE certified) to Service::handle and sends back its
// reply. Protocol version 1; every request names its version and operation:
// Every request may carry "nonce" (1-64 of [0-9a-f]): the reply echoes it,
// so a client knows the reply answers its own request.
//   ping                                   anyone: who am I to the service
//   submit {job, verdicts:[...]}           the job's user while it runs, root, admins
//   query  {job}                           the job's user, root, admins
//   node   {node}                          root, admins: open verdicts and decisions
//   gating {job, node, decision, reason}   root (the epilog and prolog)
//   clear  {node, reason}                  admins
//   nodes                                  root, admins: every node's open
//                                          verdicts, 7/30-day counts, last decision
//   backlog {job, node, pending, oldest_s} the job's user while it runs, root,
//                                          admins: a scoutd's forwarding backlog
//                                          (verdicts committed, not yet forwarded)
// Refusals are counted by reason (for /metrics) and logged by the server:
// what they quote of a request is escaped and bounded (common::quoted).
// Requests are UTF-8 (one that is not is refused, naming the field); every
// reply is valid UTF-8 whatever the ledger's rows hold, so it can be dumped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ledgerd/site_config.hpp"
#include "sql/ledger.hpp"

namespace scout::ledgerd {

// Version 2: requests carry a "nonce" the reply echoes, and replies are
// MUNGE credentials of the service (see server.hpp).
inline constexpr int kProtocolVersion = 2;
inline constexpr std::size_t kMaxRequestBytes = std::size_t{1} << 20;  // one line
inline constexpr std::size_t kMaxVerdictsPerSubmit = 1000;
// What the service stores of a decision's text, cut on a character boundary
// (common/untrusted_text.hpp): a reason, who decided, a user's name.
inline constexpr std::size_t kMaxReasonBytes = 4096;
inline constexpr std::size_t kMaxDecidedByBytes = 256;
inline constexpr std::size_t kMaxNameBytes = 256;
using common::kMaxEvidenceBytes;  // a verdict's or a decision's evidence

struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
};

// What Slurm says of a job: its user, whether it still runs, and the nodes
// of its allocation (a user's verdict may name only these).
struct JobInfo {
  uid_t uid = 0;
  bool running = false;
  std::vector<std::string> nodes;
  // Seconds since the epoch (0: Slurm did not say). A job submitted after
  // the ledger's job of the same id began is another job: Slurm reused the
  // id (its counter wrapped, or its state was lost). The ledger then keeps
  // the earlier job's verdicts under retired keys and shows this job's only.
  std::int64_t submitted = 0;
};
using JobOracle = std::function<std::optional<JobInfo>(const std::string& job)>;
// The production oracle: squeue's uid, state and node list fields, with a
// deadline (common/slurm_jobs.hpp); `scontrol` may be a path.
JobOracle slurm_oracle(std::string scontrol = "scontrol", double timeout_s = 10);

// Per-job quotas on what a user (not root or an administrator) may submit.
inline constexpr std::int64_t kMaxUserVerdictsPerJob = 10000;
// ... and in bytes (ranks, hosts, evidence, key and step as stored): per job,
// and per user over every job in the last day.
inline constexpr std::int64_t kMaxUserBytesPerJob = std::int64_t{4} << 20;
inline constexpr std::int64_t kMaxUserBytesPerDay = std::int64_t{32} << 20;
// Every reply is bounded below MUNGE's 1 MiB payload (and the server's 900
// KiB): node and query answer a page of at most this many bytes of rows and
// say where the next starts ("before" / "after").
inline constexpr std::size_t kReplyPageBytes = std::size_t{512} << 10;
inline constexpr int kMaxPageRows = 500;
// Decisions older than this are deleted a few at a time as new ones come
// (never what a node's current state names: its latest decision and clear).
inline constexpr int kDecisionRetentionDays = 400;

// Whether a uid is an administrator: root, a listed user, or a member of a
// listed group.
bool is_admin(const SiteConfig& cfg, uid_t uid);
// Whether Slurm's job `info` was submitted after the ledger's job `row` of
// the same id began: Slurm reused the id (or requeued the job).
bool renewal_due(const sql::JobRow& row, const JobInfo& info);

class Service {
 public:
  Service(SiteConfig cfg, sql::Ledger& ledger, JobOracle oracle);
  // One request: returns the reply object ({"ok":true,...} or
  // {"ok":false,"error":"...","refused":"reason"}). Never throws.
  // Thread-safe: one request at a time holds the service, except while it
  // waits for Slurm (job_info), so a slow scontrol stalls no other request.
  nlohmann::json handle(const Identity& who, const std::string& payload);
  // The service's lock, for readers outside handle() (/metrics).
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mu_); }
  // Counters by reason and by operation: fixed label sets (unknown
  // operations count as "unknown"), so no client can grow them.
  // (copies, under a lock of their own: /metrics reads them without
  // waiting for a request that holds the service)
  std::map<std::string, std::uint64_t> refused() const;
  std::map<std::string, std::uint64_t> requests() const;
  sql::Ledger& ledger() { return ledger_; }
  // The scoutds' forwarding backlogs by node (every job's on it summed):
  // verdicts not forwarded yet, and the age of the oldest now (it grows
  // between reports, so a scoutd that stopped reaching the service shows).
  struct NodeBacklog {
    std::int64_t pending = 0;
    double oldest_s = 0;
  };
  std::map<std::string, NodeBacklog> backlogs(std::chrono::steady_clock::time_point now);
  // At most this many (job, node) backlogs are kept; a report older than a
  // day is dropped.
  static constexpr std::size_t kMaxBacklogs = 100000;

 private:
  nlohmann::json handle_locked(const Identity& who, const std::string& payload);
  nlohmann::json refuse(const std::string& reason, const std::string& message);
  nlohmann::json submit(const Identity& who, const nlohmann::json& req);
  nlohmann::json query(const Identity& who, const nlohmann::json& req);
  nlohmann::json node(const Identity& who, const nlohmann::json& req);
  nlohmann::json gating(const Identity& who, const nlohmann::json& req);
  nlohmann::json clear(const Identity& who, const nlohmann::json& req);
  nlohmann::json nodes(const Identity& who, const nlohmann::json& req);
  nlohmann::json backlog(const Identity& who, const nlohmann::json& req);
  bool admin(uid_t uid) const { return is_admin(cfg_, uid); }
  // The oracle's answer, cached (a running job for 30 s, anything else for
  // 5 s): scontrol is slow and slurmctld is not to be asked per request.
  std::optional<JobInfo> job_info(const std::string& job);
  // The job's row, its owner from Slurm's answer.
  void record_job(const std::string& job, const std::optional<JobInfo>& info);

  SiteConfig cfg_;
  sql::Ledger& ledger_;
  JobOracle oracle_;
  void count_request(const std::string& op);
  // The counters and backlogs: their own lock, never held while waiting for
  // anything (a scrape takes it, never mu_).
  mutable std::mutex counters_mu_;
  std::map<std::string, std::uint64_t> refused_, requests_;
  struct Cached {
    std::optional<JobInfo> info;
    std::chrono::steady_clock::time_point at;
  };
  std::map<std::string, Cached> jobs_;
  struct Backlog {
    std::int64_t pending = 0;
    std::chrono::steady_clock::time_point oldest, reported;
  };
  std::map<std::pair<std::string, std::string>, Backlog> backlogs_;  // (job, node)
  std::mutex mu_;  // handle() holds it, except while Slurm answers (job_info)
};

}  // namespace scout::ledgerd
