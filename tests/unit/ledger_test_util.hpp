// What the ledger unit tests share: a temporary directory, the schema
// version of a file, the text of a migration, a raw statement.
#pragma once

#include <sqlite3.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <doctest/doctest.h>

namespace ledger_test {
namespace fs = std::filesystem;
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/scout-ledger-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

inline int user_version(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr);
  int v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

// The text of sql/migrations/NAME, to build a ledger of an older version.
inline std::string migration(const std::string& name) {
  const char* src = std::getenv("top_srcdir");
  std::string path = std::string(src ? src : "..") + "/sql/migrations/" + name;
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read ", path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void raw_exec(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  sqlite3_close(db);
}
}  // namespace ledger_test
