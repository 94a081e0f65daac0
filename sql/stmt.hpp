// One prepared statement of a Ledger (internal to sql/): reset and cleared
// between uses, finalized on close; every error a LedgerError.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sql/ledger.hpp"

namespace scout::sql {

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

// A list of verdict kinds as the JSON array the statements take (kinds are
// plain words: libc3's names).
inline std::string kinds_array(const std::vector<std::string>& kinds) {
  std::string arr = "[";
  for (auto& k : kinds) arr += (arr.size() > 1 ? ",\"" : "\"") + k + "\"";
  return arr + "]";
}

}  // namespace scout::sql
