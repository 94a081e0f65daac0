// Ledger access layer (see ledger.hpp). SQL lives in sql/migrations/*.sql
// (embedded at build time) and in the named constants of statements.hpp.
#include "sql/ledger.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "sql/statements.hpp"

namespace scout::sql {

using namespace statements;

namespace {
// Generated from sql/migrations/*.sql: kMigrations[i] brings the schema from
// version i to version i + 1.
#include "sql/migrations.inc"
}  // namespace

// One prepared statement, reset and cleared between uses, finalized on close.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK)
      throw LedgerError(LedgerError::Code::kIo,
                        fmt::format("ledger: prepare: {}", sqlite3_errmsg(db)));
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
    col_ = 0;
    return *this;
  }
  Stmt& bind(const std::string& s) {
    check(sqlite3_bind_text(st_, ++col_, s.c_str(), static_cast<int>(s.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Stmt& bind(std::int64_t v) {
    check(sqlite3_bind_int64(st_, ++col_, v));
    return *this;
  }
  Stmt& bind(double v) {
    check(sqlite3_bind_double(st_, ++col_, v));
    return *this;
  }
  Stmt& bind_null() {
    check(sqlite3_bind_null(st_, ++col_));
    return *this;
  }
  // true while a row is available
  bool step() {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw LedgerError(rc == SQLITE_NOTADB ? LedgerError::Code::kNotSqlite : LedgerError::Code::kIo,
                      fmt::format("ledger: {}", sqlite3_errmsg(db_)));
  }
  void run() {
    while (step()) {
    }
  }
  std::string text(int i) {
    auto* p = sqlite3_column_text(st_, i);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  std::optional<std::string> opt_text(int i) {
    if (sqlite3_column_type(st_, i) == SQLITE_NULL) return std::nullopt;
    return text(i);
  }
  std::int64_t i64(int i) { return sqlite3_column_int64(st_, i); }
  double f64(int i) { return sqlite3_column_double(st_, i); }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK)
      throw LedgerError(LedgerError::Code::kIo, fmt::format("ledger: bind: {}", sqlite3_errmsg(db_)));
  }
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  int col_ = 0;
};

Ledger::Ledger(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
Ledger::Ledger(Ledger&& o) noexcept
    : db_(std::exchange(o.db_, nullptr)), path_(std::move(o.path_)),
      private_copy_dir_(std::exchange(o.private_copy_dir_, {})), deadline_(o.deadline_), stmts_(std::move(o.stmts_)) {
  arm_deadline();  // the handler points at this object's deadline
}
Ledger& Ledger::operator=(Ledger&& o) noexcept {
  if (this != &o) {
    stmts_.clear();
    if (db_) sqlite3_close(db_);
    db_ = std::exchange(o.db_, nullptr);
    path_ = std::move(o.path_);
    private_copy_dir_ = std::exchange(o.private_copy_dir_, {});
    deadline_ = o.deadline_;
    stmts_ = std::move(o.stmts_);
    arm_deadline();
  }
  return *this;
}
Ledger::~Ledger() {
  stmts_.clear();
  if (db_) sqlite3_close(db_);
  if (!private_copy_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(private_copy_dir_, ec);
  }
}

namespace {
// Copies an untrusted file through one descriptor opened without following
// links or blocking (a FIFO or device swapped in is refused by fstat, never
// waited on). Returns false if it does not exist; throws on anything else.
bool copy_untrusted(const std::string& from, const std::string& to, uid_t owner, std::size_t max_bytes,
                    const std::string& what) {
  const int fd = ::open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    throw LedgerError(LedgerError::Code::kUnreadable, fmt::format("ledger: {}: {}{}", from, std::strerror(errno),
                                                                  errno == ELOOP ? " (a symbolic link; refused)" : ""));
  }
  struct stat st {};
  std::string err;
  if (::fstat(fd, &st) != 0) err = std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) err = "not a regular file; expected " + what;
  else if (st.st_uid != owner) err = fmt::format("owned by uid {}, not by the job's user {}", st.st_uid, owner);
  else if (static_cast<std::size_t>(st.st_size) > max_bytes)
    err = fmt::format("{} bytes; expected at most {}", st.st_size, max_bytes);
  if (!err.empty()) {
    ::close(fd);
    throw LedgerError(LedgerError::Code::kUnreadable, fmt::format("ledger: {}: {}", from, err));
  }
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0) {
    ::close(fd);
    throw LedgerError(LedgerError::Code::kIo, fmt::format("ledger: {}: {}", to, std::strerror(errno)));
  }
  char buf[65536];
  std::size_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    total += static_cast<std::size_t>(n);
    if (total > max_bytes || ::write(out, buf, static_cast<std::size_t>(n)) != n) {
      err = total > max_bytes ? fmt::format("grew past {} bytes while read", max_bytes) : std::strerror(errno);
      break;
    }
  }
  ::close(fd);
  ::close(out);
  if (!err.empty()) throw LedgerError(LedgerError::Code::kUnreadable, fmt::format("ledger: {}: {}", from, err));
  return true;
}

double monotonic_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}
}  // namespace

Ledger Ledger::open_untrusted(const std::string& path, uid_t owner, std::size_t max_bytes, double seconds) {
  char tmpl[] = "/tmp/scout-untrusted.XXXXXX";
  if (!::mkdtemp(tmpl))
    throw LedgerError(LedgerError::Code::kIo, fmt::format("ledger: private copy: {}", std::strerror(errno)));
  const std::string dir = tmpl, copy = dir + "/spool.db";
  auto cleanup = [&] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  };
  sqlite3* db = nullptr;
  try {
    if (!copy_untrusted(path, copy, owner, max_bytes, "an SQLite ledger"))
      throw LedgerError(LedgerError::Code::kMissing, fmt::format("ledger: {}: no such ledger file", path));
    copy_untrusted(path + "-wal", copy + "-wal", owner, max_bytes, "its write-ahead log");
    int rc = sqlite3_open_v2(copy.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                             nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
      throw LedgerError(LedgerError::Code::kUnreadable, fmt::format("ledger: {}: {}", path, msg));
    }
  } catch (...) {
    if (db) sqlite3_close(db);
    cleanup();
    throw;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
  sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, 1 << 16);
  sqlite3_limit(db, SQLITE_LIMIT_COLUMN, 100);
  sqlite3_limit(db, SQLITE_LIMIT_EXPR_DEPTH, 100);
  sqlite3_limit(db, SQLITE_LIMIT_COMPOUND_SELECT, 10);
  sqlite3_limit(db, SQLITE_LIMIT_VDBE_OP, 100000);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_limit(db, SQLITE_LIMIT_TRIGGER_DEPTH, 1);
  Ledger l(db, path);
  l.private_copy_dir_ = dir;
  l.deadline_ = monotonic_s() + seconds;
  l.arm_deadline();  // every statement on it stops at the deadline (SQLITE_INTERRUPT)
  try {
    Stmt qc(db, "PRAGMA quick_check");
    const std::string r = qc.step() ? qc.text(0) : std::string("no answer");
    if (r != "ok")
      throw LedgerError(LedgerError::Code::kNotSqlite, fmt::format("ledger: {}: quick_check: {}", path, r.substr(0, 200)));
    Stmt kinds(db, "SELECT name, type FROM sqlite_master WHERE name IN ('jobs','verdicts','nodes','replay_cycles',"
                   "'checkpoints') OR type='trigger' OR type='view'");
    while (kinds.step())
      if (kinds.text(1) != "table")
        throw LedgerError(LedgerError::Code::kNotSqlite,
                          fmt::format("ledger: {}: '{}' is a {}; expected only scout's plain tables", path,
                                      kinds.text(0).substr(0, 64), kinds.text(1)));
    const int v = l.schema_version();
    if (v == 0 || v > kSchemaVersion)
      throw LedgerError(LedgerError::Code::kNotSqlite,
                        fmt::format("ledger: {}: schema version {}; expected 1 to {}", path, v, kSchemaVersion));
  } catch (const LedgerError&) {
    throw;
  } catch (const std::exception& e) {
    throw LedgerError(LedgerError::Code::kNotSqlite, fmt::format("ledger: {}: {}", path, e.what()));
  }
  return l;
}

void Ledger::arm_deadline() {
  if (db_ && deadline_ > 0)
    sqlite3_progress_handler(db_, 1000, [](void* p) -> int { return monotonic_s() > *static_cast<double*>(p) ? 1 : 0; },
                             &deadline_);
}

// Opening is retried while another process holds a lock SQLite's busy
// handler does not wait for (a connection converting the file to WAL, or
// recovering a WAL left by a killed writer): many jobs starting at once on
// one ledger all get it, none fails with "database is locked".
Ledger Ledger::open(const std::string& path, Mode mode) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int attempt = 0;; ++attempt) {
    try {
      return open_once(path, mode);
    } catch (const LedgerError& e) {
      if (e.code() != LedgerError::Code::kBusy || std::chrono::steady_clock::now() > deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(20 * (attempt + 1), 250)));
    }
  }
}

// A new ledger is built whole under a private name in the same directory
// (O_EXCL|O_NOFOLLOW, 0600, schema and WAL mode in place) and then linked to
// its final name, which fails if it exists: the first creator wins, and no
// process ever opens a half-made ledger or races another one's migration.
void Ledger::create_whole(const std::string& path) {
  const std::string tmp = fmt::format("{}.new.{}.{}", path, ::getpid(),
                                      std::chrono::steady_clock::now().time_since_epoch().count() & 0xffffff);
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    throw LedgerError(LedgerError::Code::kUnreadable,
                      fmt::format("ledger: {}: cannot create: {}", path, std::strerror(errno)));
  ::close(fd);
  try {
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(tmp.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                             nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
      sqlite3_close(db);
      throw LedgerError(LedgerError::Code::kUnreadable, fmt::format("ledger: {}: {}", path, msg));
    }
    {
      Ledger l(db, tmp);
      l.exec("PRAGMA journal_mode=WAL");
      l.exec("PRAGMA foreign_keys=ON");
      l.migrate();
      l.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }  // closed: the WAL is folded back and removed
    if (::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
      // A file system without hard links: a rename can replace a ledger
      // another process just made, so only do it while there is none.
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) ::rename(tmp.c_str(), path.c_str());
    }
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  ::unlink(tmp.c_str());
  ::unlink((tmp + "-wal").c_str());
  ::unlink((tmp + "-shm").c_str());
}

Ledger Ledger::open_once(const std::string& path, Mode mode) {
  namespace fs = std::filesystem;
  if (mode == Mode::kReadCurrent) {
    Ledger l = open_once(path, Mode::kReadOnly);
    struct stat own {};
    if (l.schema_version() >= kSchemaVersion || ::access(path.c_str(), R_OK | W_OK) != 0 ||
        ::lstat(path.c_str(), &own) != 0 || own.st_uid != ::geteuid())
      return l;
    return open_once(path, Mode::kReadWrite);
  }
  if (path.empty())
    throw LedgerError(LedgerError::Code::kMissing, "ledger: no ledger path given");
  // The ledger's own name, never a link to another file; written only by
  // its owner (root never writes a file a user could have put there).
  struct stat st {};
  bool exists = ::lstat(path.c_str(), &st) == 0;
  if (exists && S_ISLNK(st.st_mode))
    throw LedgerError(LedgerError::Code::kUnreadable,
                      fmt::format("ledger: {}: a symbolic link; expected the ledger file itself", path));
  if (exists && mode == Mode::kReadWrite && S_ISREG(st.st_mode) && st.st_uid != ::geteuid())
    throw LedgerError(LedgerError::Code::kUnreadable,
                      fmt::format("ledger: {}: owned by uid {}, not by uid {}; a ledger is written only by its "
                                  "owner", path, static_cast<unsigned>(st.st_uid),
                                  static_cast<unsigned>(::geteuid())));
  if (!exists && mode == Mode::kReadOnly)
    throw LedgerError(LedgerError::Code::kMissing,
                      fmt::format("ledger: {}: no such ledger file", path));
  if (exists && !S_ISREG(st.st_mode))
    throw LedgerError(LedgerError::Code::kUnreadable,
                      fmt::format("ledger: {}: not a regular file; expected an SQLite ledger", path));
  if (exists && ::access(path.c_str(), mode == Mode::kReadOnly ? R_OK : R_OK | W_OK) != 0)
    throw LedgerError(LedgerError::Code::kUnreadable,
                      fmt::format("ledger: {}: {}", path, std::strerror(errno)));
  if (!exists) {
    std::error_code ec;
    auto dir = fs::path(path).parent_path();
    if (!dir.empty()) fs::create_directories(dir, ec);
    create_whole(path);  // then open it like any existing ledger
  }
  int flags = mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY
                                      : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    throw LedgerError(LedgerError::Code::kUnreadable, fmt::format("ledger: {}: {}", path, msg));
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 10000);
  Ledger l(db, path);
  try {
    // Touch the file format first: a non-SQLite file fails here.
    l.exec("SELECT count(*) FROM sqlite_master");
    if (mode == Mode::kReadWrite) {
      l.exec("PRAGMA journal_mode=WAL");
      // A verdict reported as committed survives power loss: every commit
      // syncs the WAL (cost per verdict: make bench, ledger-durability).
      l.exec("PRAGMA synchronous=FULL");
      l.exec("PRAGMA foreign_keys=ON");
      l.migrate();
    } else {
      int v = l.schema_version();
      if (v == 0)
        throw LedgerError(LedgerError::Code::kNotSqlite,
                          fmt::format("ledger: {}: SQLite file without a scout schema "
                                      "(user_version 0); expected a scout ledger", path));
      if (v > kSchemaVersion)
        throw LedgerError(LedgerError::Code::kSchemaTooNew,
                          fmt::format("ledger: {}: schema version {} is newer than this scout "
                                      "understands (up to {})", path, v, kSchemaVersion));
    }
  } catch (const LedgerError& e) {
    if (e.code() == LedgerError::Code::kNotSqlite &&
        std::string(e.what()).find("file is not a database") != std::string::npos)
      throw LedgerError(LedgerError::Code::kNotSqlite,
                        fmt::format("ledger: {}: file is not an SQLite database; expected a "
                                    "scout ledger", path));
    throw;
  }
  return l;
}

void Ledger::exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw LedgerError((rc & 0xff) == SQLITE_NOTADB ? LedgerError::Code::kNotSqlite
                      : ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) ? LedgerError::Code::kBusy
                                                                                      : LedgerError::Code::kIo,
                      fmt::format("ledger: {}: {}", path_, msg));
  }
}

int Ledger::schema_version() {
  Stmt s(db_, "PRAGMA user_version");
  return s.step() ? static_cast<int>(s.i64(0)) : 0;
}

void Ledger::migrate() {
  constexpr int kKnown = static_cast<int>(sizeof kMigrations / sizeof kMigrations[0]);
  static_assert(kKnown == kSchemaVersion, "kSchemaVersion must match sql/migrations");
  exec("BEGIN IMMEDIATE");
  try {
    int v = schema_version();
    if (v > kKnown)
      throw LedgerError(LedgerError::Code::kSchemaTooNew,
                        fmt::format("ledger: {}: schema version {} is newer than this scout "
                                    "understands (up to {})", path_, v, kKnown));
    for (; v < kKnown; ++v) {
      exec(kMigrations[v]);
      exec(fmt::format("PRAGMA user_version = {}", v + 1).c_str());  // written last
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

Stmt& Ledger::stmt(const char* sql) {
  auto& p = stmts_[sql];
  if (!p) p = std::make_unique<Stmt>(db_, sql);
  return p->reset();
}

std::string Ledger::reserve_local_job(JobRow row) {
  exec("BEGIN IMMEDIATE");
  try {
    auto& s = stmt(kMaxLocalJob);
    std::int64_t max = s.step() ? s.i64(0) : 0;
    s.reset();
    row.job_id = std::to_string(std::max<std::int64_t>(max + 1, 1000000));
    insert_job(row);
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return row.job_id;
}

void Ledger::insert_job(const JobRow& r) {
  stmt(kInsertJob).bind(r.job_id).bind(r.user).bind(r.uid).bind(r.launcher).bind(r.command)
      .bind(r.nodes).bind(r.ranks).bind(r.started_at.empty() ? now_iso8601() : r.started_at)
      .run();
}

void Ledger::insert_job_if_missing(const JobRow& r) {
  stmt(kInsertJobIfMissing).bind(r.job_id).bind(r.user).bind(r.uid).bind(r.launcher).bind(r.command)
      .bind(r.nodes).bind(r.ranks).bind(r.started_at.empty() ? now_iso8601() : r.started_at).run();
}

void Ledger::end_job(const std::string& job_id, std::int64_t exit_status) {
  stmt(kEndJob).bind(now_iso8601()).bind(exit_status).bind(job_id).run();
}

std::optional<JobRow> Ledger::job(const std::string& job_id) {
  auto& s = stmt(kSelectJob).bind(job_id);
  if (!s.step()) return std::nullopt;
  JobRow r;
  r.job_id = s.text(0);
  r.user = s.text(1);
  r.uid = s.i64(2);
  r.launcher = s.text(3);
  r.command = s.text(4);
  r.nodes = s.i64(5);
  r.ranks = s.i64(6);
  r.started_at = s.text(7);
  r.ended_at = s.opt_text(8);
  if (auto t = s.opt_text(9)) r.exit_status = std::stoll(*t);
  s.reset();
  return r;
}

void Ledger::upsert_node(const NodeRow& r) {
  stmt(kUpsertNode).bind(r.job_id).bind(r.node).bind(r.scoutd_pid).bind(r.first_rank)
      .bind(r.last_rank).bind(r.joined_at.empty() ? now_iso8601() : r.joined_at).run();
}

std::vector<NodeRow> Ledger::nodes(const std::string& job_id) {
  std::vector<NodeRow> out;
  auto& s = stmt(kSelectNodes).bind(job_id);
  while (s.step())
    out.push_back({s.text(0), s.text(1), s.i64(2), s.i64(3), s.i64(4), s.text(5)});
  s.reset();
  return out;
}

void Ledger::upsert_rank(const std::string& job_id, const std::string& step, std::int64_t rank,
                         const std::string& node, std::int64_t pid) {
  stmt(kUpsertRank).bind(job_id).bind(step).bind(rank).bind(node).bind(pid).run();
}

std::vector<int> Ledger::rank_pids(const std::string& job_id) {
  std::vector<int> out;
  auto& s = stmt(kRankPids).bind(job_id);
  while (s.step()) out.push_back(static_cast<int>(s.i64(0)));
  s.reset();
  return out;
}

std::int64_t Ledger::insert_verdict(const VerdictRow& v) {
  if (!v.vkey) {
    stmt(kInsertVerdict).bind(v.job_id).bind(v.step).bind(v.kind).bind(v.status).bind(v.ranks)
        .bind(v.hosts).bind(v.evidence)
        .bind(v.detected_at.empty() ? now_iso8601() : v.detected_at).run();
    return sqlite3_last_insert_rowid(db_);
  }
  auto& s = stmt(kInsertKeyedVerdict).bind(v.job_id).bind(v.step).bind(v.kind).bind(v.status).bind(v.ranks)
                .bind(v.hosts).bind(v.evidence).bind(v.detected_at.empty() ? now_iso8601() : v.detected_at);
  if (v.resolved_at) s.bind(*v.resolved_at); else s.bind_null();
  s.bind(*v.vkey).run();
  auto& q = stmt(kVerdictIdByKey).bind(*v.vkey);
  std::int64_t id = q.step() ? q.i64(0) : 0;
  q.reset();
  return id;
}

std::vector<NodeSummary> Ledger::node_summaries(const std::string& now_iso) {
  const std::int64_t now_ms = iso_to_unix_ms(now_iso);
  const std::string since7 = unix_ms_to_iso(now_ms - 7LL * 86400 * 1000);
  const std::string since30 = unix_ms_to_iso(now_ms - 30LL * 86400 * 1000);
  std::vector<NodeSummary> out;
  auto& s = stmt(kNodeSummaries).bind(since7).bind(since30);
  while (s.step())
    out.push_back({s.text(0), s.i64(1), s.i64(2), s.i64(3), s.i64(4), s.i64(5), s.text(6), s.text(7)});
  s.reset();
  return out;
}

LedgerMetrics Ledger::metrics() {
  LedgerMetrics m;
  {
    auto& s = stmt(kCountVerdicts);
    while (s.step()) m.verdicts[{s.text(0), s.text(1)}] = s.i64(2);
    s.reset();
  }
  {
    auto& s = stmt(kCountOpenByNode);
    while (s.step()) m.open_by_node[s.text(0)] = s.i64(1);
    s.reset();
  }
  auto& s = stmt(kCountDrainsByNode);
  while (s.step()) m.drains_by_node[s.text(0)] = s.i64(1);
  s.reset();
  return m;
}

int Ledger::import_verdict(const VerdictRow& v, const std::string& origin, std::int64_t origin_uid) {
  auto& s = stmt(kImportVerdict).bind(v.job_id).bind(v.step).bind(v.kind).bind(v.status).bind(v.ranks)
                .bind(v.hosts).bind(v.evidence).bind(v.detected_at);
  if (v.resolved_at) s.bind(*v.resolved_at); else s.bind_null();
  // A row without an id in its source (a service submission) has no
  // origin_id: NULLs are distinct under verdicts_by_origin, the vkey keys it.
  s.bind(origin);
  if (v.id > 0) s.bind(v.id); else s.bind_null();
  s.bind(origin_uid).bind(now_iso8601());
  if (v.vkey) s.bind(*v.vkey); else s.bind_null();
  s.run();
  const int changed = sqlite3_changes(db_);
  if (!changed && v.vkey && v.resolved_at) stmt(kResolveImportedByKey).bind(*v.resolved_at).bind(*v.vkey).run();
  return changed;
}

void Ledger::resolve_verdict_by_key(const std::string& vkey, const std::string& resolved_at) {
  stmt(kResolveVerdictByKey).bind(resolved_at).bind(vkey).run();
}

int Ledger::import_job(Ledger& from, const std::string& job_id, const std::string& origin,
                       std::int64_t origin_uid, const std::function<bool(const VerdictRow&)>& keep) {
  auto src_job = from.job(job_id);
  auto src_nodes = from.nodes(job_id);
  auto src_verdicts = from.verdicts(job_id);
  // A source is someone's file: take a bounded share of it.
  auto cap = [](auto& rows) {
    if (rows.size() > kImportMaxRows) rows.resize(kImportMaxRows);
  };
  cap(src_nodes);
  cap(src_verdicts);
  // Schema v3 sources also carry replay cycles and checkpoint states.
  std::vector<ReplayCycleRow> src_cycles;
  std::vector<CheckpointRow> src_ckpts;
  if (from.schema_version() >= 3) {
    src_cycles = from.replay_cycles(job_id);
    src_ckpts = from.checkpoints(job_id);
    cap(src_cycles);
    cap(src_ckpts);
  }
  const std::string now = now_iso8601();
  int added = 0;
  transaction([&] {
    if (src_job) {
      const auto& r = *src_job;
      stmt(kInsertJobIfMissing).bind(r.job_id).bind(r.user).bind(origin_uid >= 0 ? origin_uid : r.uid).bind(r.launcher)
          .bind(r.command).bind(r.nodes).bind(r.ranks).bind(r.started_at).run();
    } else {
      stmt(kInsertJobIfMissing).bind(job_id).bind(std::string("?")).bind(origin_uid)
          .bind(std::string("slurm")).bind(std::string("")).bind(std::int64_t{0})
          .bind(std::int64_t{0}).bind(now).run();
    }
    for (auto& n : src_nodes) upsert_node(n);
    for (auto& v : src_verdicts) {
      // A key is its job's (<job>.<step>...): a user's spool cannot take
      // the key of another job's verdict before that verdict is written.
      if (v.job_id != job_id || (v.vkey && v.vkey->rfind(job_id + ".", 0) != 0) || !keep(v)) continue;
      added += import_verdict(v, origin, origin_uid);  // the same verdict from another node's spool: known
    }
    for (auto& c : src_cycles)
      stmt(kImportCycle).bind(c.job_id).bind(c.cycle).bind(c.started_ms).bind(c.finished_ms)
          .bind(c.observers).bind(c.expected).bind(c.devices).bind(c.outcome).bind(c.cpu_s).bind(c.detail).run();
    for (auto& c : src_ckpts)
      stmt(kImportCheckpoint).bind(c.job_id).bind(c.path).bind(c.written_ms).bind(c.seen_at).bind(c.state)
          .bind(c.reason).bind(c.updated_at).run();
  });
  return added;
}

void Ledger::insert_gating(const GatingRow& g) {
  auto& s = stmt(kInsertGating);
  if (g.job_id.empty()) s.bind_null();  // a node-level decision (clear)
  else s.bind(g.job_id);
  s.bind(g.node).bind(g.decision).bind(g.reason)
      .bind(g.decided_by).bind(g.decided_at.empty() ? now_iso8601() : g.decided_at)
      .bind(g.evidence.empty() ? std::string("{}") : g.evidence).run();
}

namespace {
std::vector<GatingRow> read_gating(Stmt& s) {
  std::vector<GatingRow> out;
  while (s.step()) out.push_back({s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6)});
  s.reset();
  return out;
}
}  // namespace

std::vector<GatingRow> Ledger::gating(const std::string& job_id) { return read_gating(stmt(kSelectGating).bind(job_id)); }

std::vector<GatingRow> Ledger::node_gating(const std::string& node) {
  return read_gating(stmt(kSelectNodeGating).bind(node));
}

void Ledger::resolve_verdict(std::int64_t id, const std::string& resolved_at) {
  stmt(kResolveVerdict).bind(resolved_at).bind(id).run();
}

namespace {
std::vector<VerdictRow> read_verdicts(Stmt& s) {
  std::vector<VerdictRow> out;
  while (s.step()) {
    VerdictRow v;
    v.id = s.i64(0);
    v.job_id = s.text(1);
    v.step = s.text(2);
    v.kind = s.text(3);
    v.status = s.text(4);
    v.ranks = s.text(5);
    v.hosts = s.text(6);
    v.evidence = s.text(7);
    v.detected_at = s.text(8);
    v.resolved_at = s.opt_text(9);
    v.origin = s.opt_text(10);
    v.vkey = s.opt_text(11);
    v.confirmation = s.opt_text(12);
    out.push_back(std::move(v));
  }
  s.reset();
  return out;
}
}  // namespace

std::vector<VerdictRow> Ledger::verdicts(const std::string& job_id) {
  const int v = schema_version();
  return read_verdicts(stmt(v >= 6 ? kSelectVerdicts : v == 5 ? kSelectVerdictsV5 : kSelectVerdictsV4).bind(job_id));
}

namespace {
std::string kinds_array(const std::vector<std::string>& kinds) {
  std::string arr = "[";
  for (auto& k : kinds) arr += (arr.size() > 1 ? ",\"" : "\"") + k + "\"";  // kinds are plain words
  return arr + "]";
}
}  // namespace

std::vector<VerdictRow> Ledger::open_verdicts_on(const std::string& node, const std::vector<std::string>& kinds,
                                                 bool confirmed_only) {
  return read_verdicts(
      stmt(kSelectOpenOnNode).bind(kinds_array(kinds)).bind(node).bind(std::int64_t{confirmed_only ? 1 : 0}));
}

void Ledger::confirm(const std::string& key, const std::string& node, const std::string& confirmation,
                     const std::string& decided_by) {
  transaction([&] {
    stmt(kConfirm).bind(key).bind(node).bind(confirmation).bind(decided_by).bind(now_iso8601()).run();
    stmt(kSummariseConfirmation).bind(key).run();
  });
}

std::optional<Ledger::KeyOwner> Ledger::key_owner(const std::string& vkey) {
  auto& s = stmt(kKeyOwner).bind(vkey);
  std::optional<KeyOwner> out;
  if (s.step()) {
    out.emplace();
    out->id = s.i64(0);
    out->job_id = s.text(1);
    if (auto u = s.opt_text(2)) out->origin_uid = std::strtoll(u->c_str(), nullptr, 10);
    out->origin = s.text(3);
    out->confirmed_by_root = s.i64(4) != 0;
    out->kind = s.text(5);
    out->status = s.text(6);
    out->ranks = s.text(7);
    out->hosts = s.text(8);
  }
  s.reset();
  return out;
}

void Ledger::replace_verdict_by_key(const VerdictRow& v, const std::string& origin, std::int64_t origin_uid) {
  auto& s = stmt(kReplaceByKey).bind(*v.vkey).bind(v.step).bind(v.kind).bind(v.status).bind(v.ranks).bind(v.hosts)
                .bind(v.evidence).bind(v.detected_at);
  if (v.resolved_at) s.bind(*v.resolved_at); else s.bind_null();
  s.bind(origin).bind(origin_uid).bind(now_iso8601()).run();
}

std::int64_t Ledger::count_verdicts_from(const std::string& job_id, std::int64_t origin_uid) {
  auto& s = stmt(kCountVerdictsFrom).bind(job_id).bind(origin_uid);
  std::int64_t n = s.step() ? s.i64(0) : 0;
  s.reset();
  return n;
}

void Ledger::set_job_owner(const std::string& job_id, const std::string& user, std::int64_t uid) {
  stmt(kSetJobOwner).bind(job_id).bind(user).bind(uid).run();
}

void Ledger::transaction(const std::function<void()>& body) {
  if (!sqlite3_get_autocommit(db_)) {  // already inside one: part of it
    body();
    return;
  }
  exec("BEGIN IMMEDIATE");
  try {
    body();
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::optional<std::string> Ledger::reference_signature(const std::string& device_class, const std::string& recipe,
                                                       const std::string& seed) {
  auto& s = stmt(kSelectReference).bind(device_class).bind(recipe).bind(seed);
  std::optional<std::string> out;
  if (s.step()) out = s.text(0);
  s.reset();
  return out;
}

void Ledger::record_reference(const std::string& device_class, const std::string& recipe, const std::string& seed,
                              const std::string& signature, const std::string& node) {
  stmt(kInsertReference).bind(device_class).bind(recipe).bind(seed).bind(signature).bind(node).bind(now_iso8601()).run();
}

Ledger::Blame Ledger::node_blame(const std::string& node, const std::vector<std::string>& kinds,
                                 const std::string& since) {
  auto& s = stmt(kNodeBlame).bind(kinds_array(kinds)).bind(node).bind(since);
  Blame b;
  if (s.step()) {
    b.jobs = static_cast<int>(s.i64(0));
    b.users = static_cast<int>(s.i64(1));
  }
  s.reset();
  return b;
}

void Ledger::insert_replay_cycle(const ReplayCycleRow& r) {
  stmt(kInsertCycle).bind(r.job_id).bind(r.cycle).bind(r.started_ms).bind(r.finished_ms)
      .bind(r.observers).bind(r.expected).bind(r.devices).bind(r.outcome).bind(r.cpu_s)
      .bind(r.detail).run();
}

std::vector<ReplayCycleRow> Ledger::replay_cycles(const std::string& job_id) {
  std::vector<ReplayCycleRow> out;
  auto& s = stmt(kSelectCycles).bind(job_id);
  while (s.step())
    out.push_back({s.text(0), s.i64(1), s.i64(2), s.i64(3), s.i64(4), s.i64(5), s.i64(6),
                   s.text(7), s.f64(8), s.text(9)});
  return out;
}

bool Ledger::add_checkpoint(const CheckpointRow& c) {
  const std::string now = now_iso8601();
  stmt(kInsertCheckpoint).bind(c.job_id).bind(c.path).bind(c.written_ms)
      .bind(c.seen_at.empty() ? now : c.seen_at).bind(c.state.empty() ? std::string("candidate") : c.state)
      .bind(c.reason).bind(now).run();
  return sqlite3_changes(db_) > 0;
}

void Ledger::set_checkpoint_state(std::int64_t id, const std::string& state, const std::string& reason) {
  stmt(kUpdateCheckpoint).bind(state).bind(reason).bind(now_iso8601()).bind(id).run();
}

std::vector<CheckpointRow> Ledger::checkpoints(const std::string& job_id) {
  std::vector<CheckpointRow> out;
  auto& s = stmt(kSelectCheckpoints).bind(job_id);
  while (s.step())
    out.push_back({s.i64(0), s.text(1), s.text(2), s.i64(3), s.text(4), s.text(5), s.text(6), s.text(7)});
  return out;
}

}  // namespace scout::sql
