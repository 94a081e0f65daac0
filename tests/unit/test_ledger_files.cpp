// Ledger: schema migrations from every older version, and files that are
// not what they claim (links, FIFOs, other owners, views and triggers).
#include <doctest/doctest.h>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "libc3/verdict_kind.hpp"
#include "sql/ledger.hpp"
#include "tests/unit/ledger_test_util.hpp"

using namespace scout::sql;
using namespace ledger_test;

TEST_CASE("a version-1 ledger is migrated to version 2 without losing verdicts") {
  TempDir t;
  auto p = (t.path / "v1.db").string();
  raw_exec(p, migration("001_initial.sql").c_str());
  raw_exec(p, "PRAGMA user_version = 1");
  raw_exec(p, "INSERT INTO jobs(job_id,user,uid,launcher,started_at) VALUES('9','u',1,'slurm','t');"
              "INSERT INTO verdicts(job_id,step,kind,status,ranks,hosts,evidence,detected_at) "
              "VALUES('9','0','crash','attributed','[2]','[\"n2\"]','{}','t')");
  CHECK(user_version(p) == 1);
  auto l = Ledger::open(p, Ledger::Mode::kReadWrite);
  CHECK(l.schema_version() == kSchemaVersion);
  auto vs = l.verdicts("9");
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].kind == "crash");
  CHECK_FALSE(vs[0].origin.has_value());
  l.insert_gating({"9", "n2", "drain", "scout: crash rank 2 job 9", "test", ""});
  CHECK(l.gating("9").size() == 1);
}

TEST_CASE("a version-3 ledger keeps its gating decisions when migrated to version 4") {
  TempDir t;
  auto p = (t.path / "v3.db").string();
  for (const char* m : {"001_initial.sql", "002_provenance_gating.sql", "003_replay_checkpoints.sql"})
    raw_exec(p, migration(m).c_str());
  raw_exec(p, "PRAGMA user_version = 3");
  raw_exec(p, "INSERT INTO gating(job_id,node,decision,reason,decided_by,decided_at) "
              "VALUES('9','n2','drain','scout: crash rank 2 job 9','scout-epilog uid 0 on n2','t')");
  auto l = Ledger::open(p, Ledger::Mode::kReadWrite);
  CHECK(l.schema_version() == kSchemaVersion);
  auto g = l.gating("9");
  REQUIRE(g.size() == 1);
  CHECK(g[0].reason == "scout: crash rank 2 job 9");
  l.insert_gating({"", "n2", "clear", "replaced DIMM", "test", ""});  // no job: allowed from v4
  auto ng = l.node_gating("n2");
  REQUIRE(ng.size() == 2);
  CHECK(ng[1].decision == "clear");
  CHECK(ng[1].job_id.empty());
}

TEST_CASE("a version-4 ledger is migrated to version 5; a read-only v4 spool still imports") {
  TempDir t;
  auto p = (t.path / "v4.db").string();
  for (const char* m : {"001_initial.sql", "002_provenance_gating.sql", "003_replay_checkpoints.sql",
                        "004_node_health.sql"})
    raw_exec(p, migration(m).c_str());
  raw_exec(p, "PRAGMA user_version = 4");
  raw_exec(p, "INSERT INTO jobs(job_id,user,uid,launcher,command,nodes,ranks,started_at) "
              "VALUES('9','a',1,'slurm','',1,1,'t')");
  raw_exec(p, "INSERT INTO verdicts(job_id,step,kind,status,detected_at) VALUES('9','0','crash','attributed','t')");
  {
    auto site = Ledger::open((t.path / "site.db").string(), Ledger::Mode::kReadWrite);
    auto from = Ledger::open(p, Ledger::Mode::kReadOnly);
    CHECK(from.schema_version() == 4);
    CHECK(site.import_job(from, "9", "spool:n1:" + p, 1, [](const VerdictRow&) { return true; }) == 1);
  }
  auto l = Ledger::open(p, Ledger::Mode::kReadWrite);
  CHECK(l.schema_version() == kSchemaVersion);
  auto vs = l.verdicts("9");
  REQUIRE(vs.size() == 1);
  CHECK_FALSE(vs[0].vkey.has_value());
}

// Root's prolog reads a node ledger no epilog has opened since an upgrade:
// schema 8 kept confirmations on the verdict row; it is migrated on reading,
// and the confirmation holds for the node the row named.

TEST_CASE("a version-8 ledger read for its confirmed verdicts is migrated first (kReadCurrent)") {
  TempDir t;
  auto p = (t.path / "v8.db").string();
  for (const char* m : {"001_initial.sql", "002_provenance_gating.sql", "003_replay_checkpoints.sql",
                        "004_node_health.sql", "005_verdict_keys.sql", "006_verified_gating.sql",
                        "007_abort_deadlock.sql", "008_gpu_kinds.sql"})
    raw_exec(p, migration(m).c_str());
  raw_exec(p, "PRAGMA user_version = 8");
  raw_exec(p, "INSERT INTO jobs(job_id,user,uid,launcher,command,nodes,ranks,started_at) "
              "VALUES('9','a',1,'slurm','',1,1,'t')");
  raw_exec(p, "INSERT INTO verdicts(job_id,step,kind,status,hosts,detected_at,imported_at,vkey,confirmation) "
              "VALUES('9','0','sdc','attributed','[\"n1\"]','t','2026-01-01T00:00:00.000Z','9.0.o0.1.1','confirmed')");
  CHECK_THROWS(Ledger::open(p, Ledger::Mode::kReadOnly).open_verdicts_on("n1", {"sdc"}, true));
  auto l = Ledger::open(p, Ledger::Mode::kReadCurrent);
  CHECK(l.schema_version() == kSchemaVersion);
  CHECK(l.open_verdicts_on("n1", {"sdc"}, true).size() == 1);
  CHECK(l.open_verdicts_on("n2", {"sdc"}, true).empty());
  // A current ledger stays read-only, and a missing one is not created.
  CHECK_THROWS_AS(Ledger::open((t.path / "none.db").string(), Ledger::Mode::kReadCurrent), LedgerError);
  CHECK_FALSE(std::filesystem::exists(t.path / "none.db"));
}

// A ledger is opened by its own name: a symbolic link planted in its place
// is refused for reading and writing, and the real file is untouched.

TEST_CASE("a ledger path that is a symbolic link is refused") {
  TempDir t;
  const std::string real = (t.path / "real.db").string(), link = (t.path / "link.db").string();
  { auto l = Ledger::open(real, Ledger::Mode::kReadWrite); }
  std::filesystem::create_symlink(real, link);
  for (auto mode : {Ledger::Mode::kReadOnly, Ledger::Mode::kReadWrite, Ledger::Mode::kReadCurrent}) {
    try {
      Ledger::open(link, mode);
      FAIL("opened a symbolic link");
    } catch (const LedgerError& e) {
      CHECK_MESSAGE(std::string(e.what()).find("a symbolic link") != std::string::npos, e.what());
    }
  }
  // A dangling link is not followed to create a file either.
  std::filesystem::create_symlink(t.path / "elsewhere.db", t.path / "dangling.db");
  CHECK_THROWS_AS(Ledger::open((t.path / "dangling.db").string(), Ledger::Mode::kReadWrite), LedgerError);
  CHECK_FALSE(std::filesystem::exists(t.path / "elsewhere.db"));
}

// Trust model: times that decide openness are root's (imported_at), blame
// counts the users root certified, and only confirmed verdicts refuse nodes.

TEST_CASE("untrusted ledgers: links, FIFOs, other owners, views and triggers are refused") {
  TempDir t;
  const std::string good = (t.path / "good.db").string();
  {
    auto l = Ledger::open(good, Ledger::Mode::kReadWrite);
    l.insert_job({.job_id = "5", .user = "u", .uid = 1, .launcher = "slurm"});
  }
  const uid_t me = geteuid();
  {
    auto u = Ledger::open_untrusted(good, me);
    CHECK(u.job("5").has_value());
  }
  auto refused = [&](const std::string& path, uid_t owner, const char* what) {
    try {
      Ledger::open_untrusted(path, owner, 1 << 20, 2);
      FAIL("opened " << path);
    } catch (const LedgerError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(what) != std::string::npos, e.what());
    }
  };
  refused(good, me + 1, "not by the job's user");
  std::filesystem::create_symlink(good, t.path / "link.db");
  refused((t.path / "link.db").string(), me, "symbolic link");
  REQUIRE(::mkfifo((t.path / "fifo.db").c_str(), 0600) == 0);
  refused((t.path / "fifo.db").string(), me, "not a regular file");  // never blocks in open()
  // A 'jobs' view over an endless recursive CTE (it hung the epilog).
  const std::string view = (t.path / "view.db").string();
  {
    auto l = Ledger::open(view, Ledger::Mode::kReadWrite);
  }
  raw_exec(view, "DROP TABLE jobs; CREATE VIEW jobs AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) "
                 "SELECT x AS job_id, '' AS user, 0 AS uid, '' AS launcher, '' AS command, 0 AS nodes, 0 AS ranks, "
                 "'' AS started_at, NULL AS ended_at, NULL AS exit_status FROM c");
  refused(view, me, "is a view");
  const std::string trig = (t.path / "trig.db").string();
  {
    auto l = Ledger::open(trig, Ledger::Mode::kReadWrite);
  }
  raw_exec(trig, "CREATE TRIGGER t AFTER INSERT ON jobs BEGIN DELETE FROM verdicts; END");
  refused(trig, me, "is a trigger");
  // Too large for the cap.
  try {
    Ledger::open_untrusted(good, me, 100, 2);
    FAIL("a ledger over the size cap was opened");
  } catch (const LedgerError& e) {
    CHECK(std::string(e.what()).find("expected at most 100") != std::string::npos);
  }
}
