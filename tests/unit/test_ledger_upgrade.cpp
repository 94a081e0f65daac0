// Ledger upgrades a site can trust: the fixture ledger of every schema
// version scout shipped (tests/fixtures/ledger/vN.sql, rows of every table
// that version had) is upgraded to the current schema by opening it as
// scout does: every row is kept with its values, the file passes SQLite's
// integrity and foreign-key checks, and scout's own readers see the rows.
// A ledger newer than this scout is refused, untouched, with a message that
// names both versions.
#include <doctest/doctest.h>

#include <sqlite3.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "sql/ledger.hpp"
#include "tests/unit/ledger_test_util.hpp"

using namespace scout::sql;
using namespace ledger_test;

namespace {

std::string fixture(int v) {
  const char* src = std::getenv("top_srcdir");
  std::string path = std::string(src ? src : "..") + "/tests/fixtures/ledger/v" + std::to_string(v) + ".sql";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read ", path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Every row of every table, each row as one text line ("|"-joined columns),
// keyed by table: what the fixture held, compared before and after.
std::map<std::string, std::vector<std::string>> dump(const std::string& path, bool named_columns = false) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  std::vector<std::string> tables;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
                     -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  std::map<std::string, std::vector<std::string>> out;
  for (auto& t : tables) {
    auto& rows = out[t];
    sqlite3_prepare_v2(db, ("SELECT * FROM " + t + " ORDER BY rowid").c_str(), -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW) {
      std::string row;
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        if (c) row += "|";
        if (named_columns) row += std::string(sqlite3_column_name(st, c)) + "=";
        auto* text = sqlite3_column_text(st, c);
        row += text ? reinterpret_cast<const char*>(text) : "NULL";
      }
      rows.push_back(row);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

std::string pragma(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  std::string out;
  sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    auto* text = sqlite3_column_text(st, 0);
    out += std::string(text ? reinterpret_cast<const char*>(text) : "NULL") + "\n";
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// The columns of `before`'s rows ("name=value|..."), each found among
// `after`'s rows with the same values (columns added later are ignored).
bool kept(const std::string& before, const std::vector<std::string>& after) {
  std::vector<std::string> cols;
  std::size_t i = 0;
  while (i <= before.size()) {
    auto j = before.find('|', i);
    if (j == std::string::npos) j = before.size();
    cols.push_back(before.substr(i, j - i));
    i = j + 1;
  }
  for (auto& row : after) {
    bool all = true;
    for (auto& c : cols)
      if (("|" + row + "|").find("|" + c + "|") == std::string::npos) { all = false; break; }
    if (all) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("the fixture ledger of every shipped schema version upgrades to the current one, every row kept") {
  for (int v = 1; v <= kSchemaVersion; ++v) {
    CAPTURE(v);
    TempDir t;
    auto p = (t.path / ("v" + std::to_string(v) + ".db")).string();
    raw_exec(p, fixture(v).c_str());
    REQUIRE(user_version(p) == v);
    const auto before = dump(p, true);
    std::size_t rows_before = 0;
    for (auto& [table, rows] : before) rows_before += rows.size();
    REQUIRE(rows_before > 10);
    {
      auto l = Ledger::open(p, Ledger::Mode::kReadWrite);
      CHECK(l.schema_version() == kSchemaVersion);
      // scout's own readers see the old rows.
      auto vs = l.verdicts("4101");
      CHECK(vs.size() >= 2);
      CHECK(to_verdicts(vs).size() == vs.size());
      CHECK(l.job("4101").has_value());
      CHECK(l.job("4101")->user == "alice");
      if (v >= 2) CHECK(l.gating("4101").size() >= 2);
      if (v >= 3) {
        CHECK(l.checkpoints("4101").size() == 1);
        CHECK(l.checkpoints("4101")[0].state == "recovery_verified");
        CHECK(l.replay_cycles("4102").size() == 1);
      }
      if (v >= 4) CHECK(l.node_gating("n2").back().decision == "clear");
      // And write to them as before.
      l.insert_gating({"4104", "n1", "keep", "after the upgrade", "test", ""});
    }
    CHECK(pragma(p, "PRAGMA integrity_check") == "ok\n");
    CHECK(pragma(p, "PRAGMA foreign_key_check") == "");
    CHECK(user_version(p) == kSchemaVersion);
    const auto after = dump(p, true);
    for (auto& [table, rows] : before) {
      CAPTURE(table);
      REQUIRE(after.count(table) == 1);
      CHECK(after.at(table).size() >= rows.size());
      for (auto& r : rows) {
        CAPTURE(r);
        if (table == "node_state" && r.rfind("node=n1|", 0) == 0) continue;  // the decision written above moved it on
        CHECK(kept(r, after.at(table)));
      }
    }
    // Nothing but the row written above and the confirmations schema 9 took
    // from the verdict rows was added.
    std::size_t rows_after = 0;
    // (and the node states schema 11 took from the decisions)
    for (auto& [table, rows] : after)
      rows_after += (table == "confirmations" && v < 9) || (table == "node_state" && v < 11) ? 0 : rows.size();
    CHECK(rows_after == rows_before + 1);
  }
}

TEST_CASE("a ledger of a newer schema is refused with both versions named, and left as it is") {
  TempDir t;
  auto p = (t.path / "newer.db").string();
  raw_exec(p, fixture(kSchemaVersion).c_str());
  const int newer = kSchemaVersion + 1;
  raw_exec(p, ("PRAGMA user_version = " + std::to_string(newer)).c_str());
  const auto before = dump(p);
  for (auto mode : {Ledger::Mode::kReadWrite, Ledger::Mode::kReadOnly, Ledger::Mode::kReadCurrent}) {
    try {
      Ledger::open(p, mode);
      FAIL("a newer ledger was opened");
    } catch (const LedgerError& e) {
      CHECK(e.code() == LedgerError::Code::kSchemaTooNew);
      const std::string what = e.what();
      CHECK(what.find("schema version " + std::to_string(newer)) != std::string::npos);
      CHECK(what.find("up to " + std::to_string(kSchemaVersion)) != std::string::npos);
    }
  }
  CHECK(user_version(p) == newer);
  CHECK(dump(p) == before);
}
