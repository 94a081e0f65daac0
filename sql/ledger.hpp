// The ledger access layer shared by scoutd, scoutctl and scout-run: one
// SQLite file, schema migrated by PRAGMA user_version, WAL, a busy timeout,
// every statement prepared once. Must never lose a committed verdict: each
// write is its own transaction, committed before it is reported.
#pragma once

#include <sys/types.h>

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/verdict.hpp"

namespace scout::sql {

class LedgerError : public std::runtime_error {
 public:
  enum class Code { kMissing, kUnreadable, kNotSqlite, kSchemaTooNew, kIo, kBusy };
  LedgerError(Code c, const std::string& msg) : std::runtime_error(msg), code_(c) {}
  Code code() const noexcept { return code_; }

 private:
  Code code_;
};

struct JobRow {
  std::string job_id{};
  std::string user{};
  std::int64_t uid = 0;
  std::string launcher{};
  std::string command{};
  std::int64_t nodes = 0;
  std::int64_t ranks = 0;
  std::string started_at{};
  std::optional<std::string> ended_at{};
  std::optional<std::int64_t> exit_status{};
};

struct NodeRow {
  std::string job_id, node;
  std::int64_t scoutd_pid = 0, first_rank = 0, last_rank = 0;
  std::string joined_at;
};

// A verdict row as stored: the columns as text, which in a user's spool a
// user may have written. Read it through to_verdict (the one verdict type)
// before deciding on it or showing it.
struct VerdictRow {
  std::int64_t id = 0;
  std::string job_id, step, kind, status;
  std::string ranks = "[]", hosts = "[]", evidence = "{}";
  std::string detected_at;
  std::optional<std::string> resolved_at;
  std::optional<std::string> origin;  // provenance of an imported row
  std::optional<std::string> vkey;    // stable key of the verdict (schema 5)
  std::optional<std::string> confirmation;  // root's check (schema 6): confirmed, unconfirmed
};

// The row as the one verdict type (common/verdict.hpp). Columns are read
// within bounds: a ranks or evidence column that is not of its shape reads
// as empty; an unknown kind or status, or a hosts column that is not a list
// of node names, refuses the row (nullopt, with why).
std::optional<common::Verdict> to_verdict(const VerdictRow& r, std::string* why = nullptr);
// Every row of `rows` that reads as a verdict; `refused` counts the others.
std::vector<common::Verdict> to_verdicts(const std::vector<VerdictRow>& rows, std::size_t* refused = nullptr);
// A verdict as a row to store (the columns encoded from its typed fields).
VerdictRow to_row(const common::Verdict& v);
// The same, each as common::to_json: what scoutctl and scout-ledgerd print.
nlohmann::json verdicts_json(const std::vector<VerdictRow>& rows);

// A setting retuned while the job ran (scoutctl set), as adopted.
struct SettingRow {
  std::string job_id, step;
  std::int64_t version = 0;
  std::string key, old_value, new_value;
  std::int64_t set_by_uid = -1;
  std::string set_by, via_node, set_at;
};

struct GatingRow {
  std::string job_id, node, decision, reason, decided_by, decided_at;
  std::string evidence = "{}";  // what root checked and the result (JSON)
};

// A decision as scoutctl and scout-ledgerd print it (evidence read within
// bounds; no job: a node's clear).
nlohmann::json gating_json(const GatingRow& g);

struct ReplayCycleRow {
  std::string job_id;
  std::int64_t cycle = 0, started_ms = 0, finished_ms = 0;
  std::int64_t observers = 0, expected = 0, devices = 0;
  std::string outcome;  // clean, dissent, incomplete
  double cpu_s = 0;
  std::string detail = "{}";
};

struct CheckpointRow {
  std::int64_t id = 0;
  std::string job_id, path;
  std::int64_t written_ms = 0;
  std::string seen_at, state, reason, updated_at;
};

struct NodeSummary {
  std::string node;
  std::int64_t open = 0, verdicts_7d = 0, verdicts_30d = 0, drains_7d = 0, drains_30d = 0;
  std::string last_decision, last_decided_at;  // empty if none
};

struct LedgerMetrics {
  std::map<std::pair<std::string, std::string>, std::int64_t> verdicts;  // (kind, status) -> count
  std::map<std::string, std::int64_t> open_by_node, drains_by_node;
  std::map<std::string, bool> drained_now;  // node -> its latest decision left it drained by scout
};

inline constexpr int kSchemaVersion = 11;

// ISO-8601 UTC with milliseconds, e.g. 2026-11-29T17:39:29.123Z
std::string now_iso8601();
// ISO-8601 UTC with milliseconds <-> Unix milliseconds (0 for what does not parse).
std::int64_t now_unix_ms();  // wall clock, Unix milliseconds
std::int64_t iso_to_unix_ms(const std::string& iso);
std::string unix_ms_to_iso(std::int64_t ms);

class Stmt;

class Ledger {
 public:
  enum class Mode { kReadOnly, kReadWrite, kReadCurrent };
  // kReadWrite creates the file (and its directory) and migrates it;
  // kReadOnly requires an existing ledger of a known schema version;
  // kReadCurrent requires an existing ledger and migrates it first when its
  // schema is older than this scout's and the caller may write it (root's
  // prolog reading a node ledger no epilog has opened since an upgrade),
  // else it is read as kReadOnly.
  static Ledger open(const std::string& path, Mode mode);

  // A ledger a user wrote (a job's spool), read by root: never opened in
  // place. The file (and its -wal) is opened O_NOFOLLOW|O_NONBLOCK, checked
  // with fstat (regular, owned by `owner`, at most `max_bytes`), copied
  // through that descriptor into a private directory, and the copy is opened
  // with SQLITE_DBCONFIG_DEFENSIVE, trusted_schema off, tight sqlite3_limits,
  // a progress-handler deadline of `seconds`, after quick_check passes and
  // jobs/verdicts are plain tables (no views, no triggers). Throws
  // LedgerError naming what was expected.
  static Ledger open_untrusted(const std::string& path, uid_t owner, std::size_t max_bytes = std::size_t{64} << 20,
                               double seconds = 10);
  // Caps on what import_job takes from one source: rows per table, bytes
  // per job (every table's text together: a node's ledger is root's and
  // kept, a user's spool may be 64 MiB), and evidence per verdict (a larger
  // one is replaced by a note of its size, the verdict itself imported).
  static constexpr std::size_t kImportMaxRows = 2000;
  static constexpr std::size_t kImportMaxBytes = std::size_t{4} << 20;
  static constexpr std::size_t kImportMaxEvidenceBytes = std::size_t{64} << 10;
  // What import_job left out of a source, for the caller's message.
  struct ImportDropped {
    std::size_t rows = 0;       // over a table's row cap or the job's byte cap
    std::size_t evidence = 0;   // evidence replaced by a note of its size
    bool any() const { return rows > 0 || evidence > 0; }
  };
  LedgerMetrics metrics();
  // Every node with verdicts or decisions, for administrators (scoutctl nodes).
  std::vector<NodeSummary> node_summaries(const std::string& now_iso);
  // synchronous=FULL: a commit survives power loss (the site ledger service).
  void set_durable() { exec("PRAGMA synchronous=FULL"); }

  Ledger(Ledger&&) noexcept;
  Ledger& operator=(Ledger&&) noexcept;
  ~Ledger();

  int schema_version();
  const std::string& path() const noexcept { return path_; }

  // A new local (scout-run) job id: decimal, one above the largest in the
  // ledger and at least 1000000, reserved by inserting the job row.
  std::string reserve_local_job(JobRow row);
  void insert_job(const JobRow& row);  // insert or replace
  // The job row unless one exists (every scoutd of a job may call it).
  void insert_job_if_missing(const JobRow& r);
  void end_job(const std::string& job_id, std::int64_t exit_status);
  std::optional<JobRow> job(const std::string& job_id);

  void upsert_node(const NodeRow& row);
  std::vector<NodeRow> nodes(const std::string& job_id);
  void upsert_rank(const std::string& job_id, const std::string& step, std::int64_t rank,
                   const std::string& node, std::int64_t pid);

  std::vector<int> rank_pids(const std::string& job_id);

  std::int64_t insert_verdict(const VerdictRow& v);  // returns the new id
  void resolve_verdict(std::int64_t id, const std::string& resolved_at);
  // By the verdict's stable key (a replica's local id differs from the
  // deciding observer's).
  void resolve_verdict_by_key(const std::string& vkey, const std::string& resolved_at);
  // A verdict that arrived from elsewhere (a scoutd, an epilog), with its
  // provenance; idempotent on v.vkey. Returns 1 if added, 0 if known (its
  // resolution is taken over if it has one). The job row must exist.
  int import_verdict(const VerdictRow& v, const std::string& origin, std::int64_t origin_uid);
  std::vector<VerdictRow> verdicts(const std::string& job_id);

  // Copies job `job_id` (job row, nodes, ranks, verdicts, replay cycles,
  // checkpoint states) from another
  // ledger, stamping each verdict with its origin; rows already imported
  // are skipped. `keep` decides per verdict whether it may be imported.
  // Returns the number of verdicts added.
  int import_job(Ledger& from, const std::string& job_id, const std::string& origin,
                 std::int64_t origin_uid, const std::function<bool(const VerdictRow&)>& keep,
                 ImportDropped* dropped = nullptr);
  // Idempotent on (job, step, version, key): every observer records it.
  void insert_setting(const SettingRow& s);
  std::vector<SettingRow> settings(const std::string& job_id);
  void insert_gating(const GatingRow& g);  // empty job_id: a node-level decision (clear)
  std::vector<GatingRow> gating(const std::string& job_id);
  std::vector<GatingRow> node_gating(const std::string& node);  // oldest first
  // The latest `limit` decisions on `node` with an id below `before_id` (0:
  // from the newest), newest first, and whether older ones remain: a node's
  // history is read a page at a time.
  std::vector<std::pair<std::int64_t, GatingRow>> node_gating_page(const std::string& node, std::int64_t before_id,
                                                                   int limit, bool* more);
  std::optional<GatingRow> last_clear(const std::string& node);
  // A page of a job's verdicts: ids above `after_id`, at most `limit`, oldest
  // first; never an earlier job's of the same id (retired keys, renew_job).
  std::vector<VerdictRow> verdicts_page(const std::string& job_id, std::int64_t after_id, int limit);
  // What `origin_uid` submitted: rows and bytes for one job; bytes since `since` (ISO-8601) over all jobs.
  std::pair<std::int64_t, std::int64_t> submitted_by_job(std::int64_t origin_uid, const std::string& job_id);
  std::int64_t submitted_since(std::int64_t origin_uid, const std::string& since);
  // Retention: deletes at most `max_rows` decisions decided before `before`
  // (ISO-8601 UTC), never the ones a node's current state names (its latest
  // decision and latest clear: node_state keeps drained-now, drains and
  // the open-verdict rule exact). Returns how many were deleted.
  std::int64_t prune_decisions(const std::string& before, std::int64_t max_rows);

  // Node health: attributed, unresolved verdicts of `kinds` naming `node`
  // that were detected (or imported) after the node's last 'clear'
  // decision (no kinds: every kind). The prolog refuses a node that has one.
  // Oldest first.
  std::vector<VerdictRow> open_verdicts_on(const std::string& node, const std::vector<std::string>& kinds,
                                           bool confirmed_only = false);
  // Root's check of what a verdict says of one node (schema 9): `key` is
  // the verdict's vkey, or '#<id>' for a row of this ledger without one. The
  // prolog of `node` refuses it only for a confirmation recorded for `node`.
  void confirm(const std::string& key, const std::string& node, const std::string& confirmation,
               const std::string& decided_by);
  // Who wrote the row with this key, for the service's conflict rules.
  struct KeyOwner {
    std::int64_t id = 0;
    std::string job_id;
    std::optional<std::int64_t> origin_uid;
    std::string origin;
    bool confirmed_by_root = false;  // any confirmation recorded for it
    std::string kind, status, ranks, hosts;
  };
  std::optional<KeyOwner> key_owner(const std::string& vkey);
  // Replaces the content of the row with this key (root's copy wins a key
  // conflict); the row keeps its id.
  void replace_verdict_by_key(const VerdictRow& v, const std::string& origin, std::int64_t origin_uid);
  // Verdicts of a job that `origin_uid` submitted (per-job quotas).
  std::int64_t count_verdicts_from(const std::string& job_id, std::int64_t origin_uid);
  // Runs `body` in one transaction (BEGIN IMMEDIATE ... COMMIT), rolled back
  // if it throws.
  void transaction(const std::function<void()>& body);
  // The owner of a job row (when Slurm says it differs from what was stored).
  void set_job_owner(const std::string& job_id, const std::string& user, std::int64_t uid);
  // Another job was given `job_id` (Slurm reused it, or requeued the job),
  // submitted at `started_at`: the row becomes the new job's (owner, start,
  // no end), and the verdicts recorded until now keep their rows under
  // retired keys (`KEY@ID`, their confirmations too; confirmations of keys
  // without a row are deleted), so the new job's keys are free and its
  // pages show none of them. Returns how many verdicts were retired. Call
  // inside a transaction, before the new job's rows are written.
  int renew_job(const std::string& job_id, const std::string& user, std::int64_t uid, const std::string& started_at);
  std::optional<std::string> reference_signature(const std::string& device_class, const std::string& recipe,
                                                 const std::string& seed);
  void record_reference(const std::string& device_class, const std::string& recipe, const std::string& seed,
                        const std::string& signature, const std::string& node);
  struct Blame {
    int jobs = 0, users = 0;
  };
  // Distinct jobs and users whose attributed verdicts of `kinds` named `node`
  // since `since` (ISO-8601 UTC, compared with root-stamped import times).
  Blame node_blame(const std::string& node, const std::vector<std::string>& kinds, const std::string& since);

  void insert_replay_cycle(const ReplayCycleRow& r);  // one row per (job, cycle)
  std::vector<ReplayCycleRow> replay_cycles(const std::string& job_id);
  // Inserts a candidate if the path is new; returns true when inserted.
  bool add_checkpoint(const CheckpointRow& c);
  void set_checkpoint_state(std::int64_t id, const std::string& state, const std::string& reason);
  std::vector<CheckpointRow> checkpoints(const std::string& job_id);  // oldest first

 private:
  static Ledger open_once(const std::string& path, Mode mode);
  static void create_whole(const std::string& path);
  Ledger(sqlite3* db, std::string path);
  void migrate();
  Stmt& stmt(const char* sql);
  void exec(const char* sql);

  sqlite3* db_ = nullptr;
  std::string path_;
  void arm_deadline();
  std::string private_copy_dir_;  // open_untrusted: removed with the ledger
  double deadline_ = 0;           // open_untrusted: CLOCK_MONOTONIC seconds
  std::map<const char*, std::unique_ptr<Stmt>> stmts_;
};

}  // namespace scout::sql
