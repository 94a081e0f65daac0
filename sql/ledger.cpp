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
#include "sql/stmt.hpp"

namespace scout::sql {

using namespace statements;

namespace {
// Generated from sql/migrations/*.sql: kMigrations[i] brings the schema from
// version i to version i + 1.
#include "sql/migrations.inc"
}  // namespace


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
      // A newer ledger is refused before anything is written to it (not
      // even the journal mode): a downgrade leaves the file as it was.
      if (const int v = l.schema_version(); v > kSchemaVersion)
        throw LedgerError(LedgerError::Code::kSchemaTooNew,
                          fmt::format("ledger: {}: schema version {} is newer than this scout "
                                      "understands (up to {}); use the scout that wrote it, or a newer one", path, v,
                                      kSchemaVersion));
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

}  // namespace scout::sql
