// Ledger: migrations by user_version, committed verdicts survive reopening,
// bad files get errors that name what was expected.
#include <doctest/doctest.h>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "libc3/verdict_kind.hpp"
#include "sql/ledger.hpp"
#include "tests/unit/ledger_test_util.hpp"

using namespace scout::sql;
namespace fs = std::filesystem;

using namespace ledger_test;

TEST_CASE("a new ledger is migrated to the current schema version") {
  TempDir t;
  auto p = (t.path / "sub" / "ledger.db").string();
  { auto l = Ledger::open(p, Ledger::Mode::kReadWrite); CHECK(l.schema_version() == kSchemaVersion); }
  CHECK(user_version(p) == kSchemaVersion);
  // Migrating again is a no-op and keeps the data.
  {
    auto l = Ledger::open(p, Ledger::Mode::kReadWrite);
    l.insert_job({.job_id = "1000001", .user = "u", .uid = 1, .launcher = "scout-run"});
  }
  auto l = Ledger::open(p, Ledger::Mode::kReadWrite);
  CHECK(l.job("1000001").has_value());
}

TEST_CASE("verdicts are committed and survive reopen; resolve sets resolved_at once") {
  TempDir t;
  auto p = (t.path / "ledger.db").string();
  std::int64_t id = 0;
  {
    auto l = Ledger::open(p, Ledger::Mode::kReadWrite);
    l.insert_job({.job_id = "17", .user = "u", .uid = 1, .launcher = "slurm"});
    VerdictRow v;
    v.job_id = "17";
    v.step = "0";
    v.kind = "stall";
    v.status = "attributed";
    v.ranks = "[5]";
    v.hosts = "[\"n3\"]";
    v.evidence = R"({"rule":"x"})";
    id = l.insert_verdict(v);
    CHECK(id > 0);
  }
  auto r = Ledger::open(p, Ledger::Mode::kReadOnly);
  auto vs = r.verdicts("17");
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].kind == "stall");
  CHECK(vs[0].ranks == "[5]");
  CHECK_FALSE(vs[0].resolved_at.has_value());
  auto w = Ledger::open(p, Ledger::Mode::kReadWrite);
  w.resolve_verdict(id, "2026-01-01T00:00:00.000Z");
  w.resolve_verdict(id, "2027-01-01T00:00:00.000Z");  // already resolved: unchanged
  CHECK(w.verdicts("17")[0].resolved_at == std::optional<std::string>("2026-01-01T00:00:00.000Z"));
}

TEST_CASE("the schema rejects unknown verdict kinds") {
  TempDir t;
  auto l = Ledger::open((t.path / "l.db").string(), Ledger::Mode::kReadWrite);
  l.insert_job({.job_id = "1", .user = "u", .uid = 1, .launcher = "slurm"});
  VerdictRow v;
  v.job_id = "1";
  v.step = "0";
  v.kind = "bogus";
  v.status = "attributed";
  CHECK_THROWS_AS(l.insert_verdict(v), LedgerError);
}

TEST_CASE("local job ids are reserved one above the largest") {
  TempDir t;
  auto l = Ledger::open((t.path / "l.db").string(), Ledger::Mode::kReadWrite);
  JobRow j{.user = "u", .uid = 1, .launcher = "scout-run"};
  CHECK(l.reserve_local_job(j) == "1000000");
  CHECK(l.reserve_local_job(j) == "1000001");
}

TEST_CASE("bad ledger files get clear errors") {
  TempDir t;
  auto missing = (t.path / "nope.db").string();
  try {
    Ledger::open(missing, Ledger::Mode::kReadOnly);
    FAIL("expected an error");
  } catch (const LedgerError& e) {
    CHECK(e.code() == LedgerError::Code::kMissing);
    CHECK(std::string(e.what()).find("no such ledger file") != std::string::npos);
  }
  auto text = (t.path / "text.db").string();
  std::ofstream(text) << "this is not a database, just some text that is long enough to matter\n"
                      << std::string(200, 'x');
  for (auto mode : {Ledger::Mode::kReadOnly, Ledger::Mode::kReadWrite}) {
    try {
      Ledger::open(text, mode);
      FAIL("expected an error");
    } catch (const LedgerError& e) {
      CHECK(e.code() == LedgerError::Code::kNotSqlite);
      CHECK(std::string(e.what()).find("not an SQLite database") != std::string::npos);
    }
  }
  // The file was not touched.
  std::ifstream in(text);
  std::string first;
  std::getline(in, first);
  CHECK(first.rfind("this is not a database", 0) == 0);
  // A future schema is refused, not downgraded.
  auto future = (t.path / "future.db").string();
  { auto l = Ledger::open(future, Ledger::Mode::kReadWrite); }
  raw_exec(future, "PRAGMA user_version = 99");
  CHECK_THROWS_AS(Ledger::open(future, Ledger::Mode::kReadWrite), LedgerError);
  try {
    Ledger::open(future, Ledger::Mode::kReadOnly);
  } catch (const LedgerError& e) {
    CHECK(e.code() == LedgerError::Code::kSchemaTooNew);
  }
  CHECK(user_version(future) == 99);
  // An SQLite file that is not a scout ledger is refused by readers.
  auto other = (t.path / "other.db").string();
  raw_exec(other, "CREATE TABLE t(x)");
  try {
    Ledger::open(other, Ledger::Mode::kReadOnly);
    FAIL("expected an error");
  } catch (const LedgerError& e) {
    CHECK(std::string(e.what()).find("expected a scout ledger") != std::string::npos);
  }
}

// A user's spool may be 64 MiB; the node's ledger is root's and kept.
TEST_CASE("attack: a spool of large verdicts grows root's ledger by at most the job's bytes; evidence over the cap "
          "is replaced by its size") {
  TempDir t;
  auto spool = (t.path / "spool.db").string(), site = (t.path / "site.db").string();
  {
    auto s = Ledger::open(spool, Ledger::Mode::kReadWrite);
    s.insert_job({.job_id = "5", .user = "alice", .uid = 1000, .launcher = "slurm"});
    for (int i = 0; i < 300; ++i) {
      VerdictRow v;
      v.job_id = "5";
      v.step = "0";
      v.kind = "stall";
      v.status = "attributed";
      v.vkey = "5.0.o0.1." + std::to_string(i);
      // The first verdict is small (the control); then 100 with evidence
      // over the cap; then 199 just under it.
      const std::size_t n = i == 0 ? 10 : i <= 100 ? Ledger::kImportMaxEvidenceBytes + 1000
                                                    : Ledger::kImportMaxEvidenceBytes - 1000;
      v.evidence = "{\"note\":\"" + std::string(n, 'x') + "\"}";
      s.insert_verdict(v);
    }
  }
  auto from = Ledger::open(spool, Ledger::Mode::kReadOnly);
  auto to = Ledger::open(site, Ledger::Mode::kReadWrite);
  Ledger::ImportDropped dropped;
  int kept = 0;
  const int added = to.import_job(from, "5", "spool:n1:" + spool, 1000, [&](const VerdictRow&) { return ++kept, true; },
                                  &dropped);
  auto vs = to.verdicts("5");
  CHECK(added == static_cast<int>(vs.size()));
  CHECK(kept == added);  // what the caller kept (and forwards) is what was imported
  REQUIRE(vs.size() > 101);
  CHECK(vs[0].evidence.size() > 10);  // the control: kept whole
  CHECK(vs[0].evidence.find("xxxxxxxxxx") != std::string::npos);
  CHECK(vs[1].evidence.find("\"dropped\":\"evidence of ") != std::string::npos);
  CHECK(dropped.evidence == 100);
  std::size_t bytes = 0;
  for (auto& v : vs) bytes += v.evidence.size();
  CHECK(bytes <= Ledger::kImportMaxBytes);
  CHECK(vs.size() < 300);  // the job's bytes ran out
  CHECK(dropped.rows == 300 - vs.size());
}

TEST_CASE("import copies a job's verdicts once, with their origin") {
  TempDir t;
  auto spool = (t.path / "spool.db").string(), site = (t.path / "site.db").string();
  {
    auto s = Ledger::open(spool, Ledger::Mode::kReadWrite);
    s.insert_job({.job_id = "5", .user = "alice", .uid = 1000, .launcher = "slurm"});
    s.insert_job({.job_id = "6", .user = "alice", .uid = 1000, .launcher = "slurm"});
    for (const char* job : {"5", "6"}) {
      VerdictRow v;
      v.job_id = job;
      v.step = "0";
      v.kind = "stall";
      v.status = "attributed";
      v.hosts = "[\"n1\"]";
      s.insert_verdict(v);
    }
    s.insert_replay_cycle({"5", 1, 100, 200, 2, 2, 4, "clean", 0.1, "{}"});
    CheckpointRow c;
    c.job_id = "5";
    c.path = "/ck/a";
    c.written_ms = 50;
    c.state = "recovery_verified";
    c.reason = "clean cycle 1";
    s.add_checkpoint(c);
  }
  auto from = Ledger::open(spool, Ledger::Mode::kReadOnly);
  auto to = Ledger::open(site, Ledger::Mode::kReadWrite);
  auto all = [](const VerdictRow&) { return true; };
  CHECK(to.import_job(from, "5", "spool:" + spool, 1000, all) == 1);
  CHECK(to.import_job(from, "5", "spool:" + spool, 1000, all) == 0);  // idempotent
  auto vs = to.verdicts("5");
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].origin == std::optional<std::string>("spool:" + spool));
  CHECK(to.verdicts("6").empty());  // only the job asked for
  CHECK(to.job("5")->user == "alice");
  CHECK(to.replay_cycles("5").size() == 1);
  auto ck = to.checkpoints("5");
  REQUIRE(ck.size() == 1);
  CHECK(ck[0].state == "recovery_verified");
  CHECK(ck[0].path == "/ck/a");
}

TEST_CASE("replay cycles and checkpoint states are kept per job") {
  TempDir d;
  auto p = (d.path / "l.db").string();
  auto l = Ledger::open(p, Ledger::Mode::kReadWrite);
  l.insert_job({"5", "u", 1, "scout-run", "", 1, 1, "", {}, {}});
  l.insert_replay_cycle({"5", 1, 100, 200, 4, 4, 8, "clean", 0.25, "{}"});
  l.insert_replay_cycle({"5", 2, 300, 400, 4, 4, 8, "dissent", 0.5, "{\"dissents\":1}"});
  CHECK_THROWS_AS(l.insert_replay_cycle({"5", 3, 1, 2, 4, 4, 8, "maybe", 0, "{}"}), LedgerError);
  auto cs = l.replay_cycles("5");
  REQUIRE(cs.size() == 2);
  CHECK(cs[0].outcome == "clean");
  CHECK(cs[1].cpu_s == doctest::Approx(0.5));
  CheckpointRow c;
  c.job_id = "5";
  c.path = "/ck/1";
  c.written_ms = 150;
  CHECK(l.add_checkpoint(c));
  CHECK_FALSE(l.add_checkpoint(c));  // seen once
  auto ck = l.checkpoints("5");
  REQUIRE(ck.size() == 1);
  CHECK(ck[0].state == "candidate");
  l.set_checkpoint_state(ck[0].id, "recovery_verified", "clean cycle 2");
  auto again = Ledger::open(p, Ledger::Mode::kReadOnly).checkpoints("5");
  CHECK(again[0].state == "recovery_verified");
  CHECK(again[0].reason == "clean cycle 2");
  CHECK_THROWS_AS(l.set_checkpoint_state(ck[0].id, "trusted", ""), LedgerError);
}

TEST_CASE("open verdicts on a node: attributed, unresolved, of the kinds asked, since the last clear") {
  TempDir t;
  auto l = Ledger::open((t.path / "site.db").string(), Ledger::Mode::kReadWrite);
  auto add = [&](const char* job, const char* kind, const char* status, const char* hosts, const char* at) {
    l.insert_job({.job_id = job, .user = "u", .uid = 1, .launcher = "slurm"});
    VerdictRow v;
    v.job_id = job;
    v.step = "0";
    v.kind = kind;
    v.status = status;
    v.hosts = hosts;
    v.detected_at = at;
    return l.insert_verdict(v);
  };
  add("1", "sdc", "attributed", "[\"n2\"]", "2026-01-01T00:00:00.000Z");
  add("2", "sdc", "inconclusive", "[\"n2\"]", "2026-01-02T00:00:00.000Z");   // nobody named
  add("3", "sdc", "attributed", "[\"n3\"]", "2026-01-03T00:00:00.000Z");     // another node
  add("4", "stall", "attributed", "[\"n2\"]", "2026-01-04T00:00:00.000Z");   // another kind
  auto resolved = add("5", "sdc", "attributed", "[\"n2\"]", "2026-01-05T00:00:00.000Z");
  l.resolve_verdict(resolved, "2026-01-05T00:01:00.000Z");
  add("6", "sdc", "attributed", "[\"n20\"]", "2026-01-06T00:00:00.000Z");    // a name that contains n2
  auto open = l.open_verdicts_on("n2", {"sdc"});
  REQUIRE(open.size() == 1);
  CHECK(open[0].job_id == "1");
  CHECK(l.open_verdicts_on("n2", {"sdc", "stall"}).size() == 2);
  CHECK(l.open_verdicts_on("n2", {}).size() == 2);  // every kind
  CHECK(l.open_verdicts_on("n9", {"sdc"}).empty());
  // A clear closes what came before it, not what comes after.
  l.insert_gating({"", "n2", "clear", "replaced the CPU", "test", "2026-02-01T00:00:00.000Z"});
  CHECK(l.open_verdicts_on("n2", {"sdc"}).empty());
  CHECK(l.open_verdicts_on("n3", {"sdc"}).size() == 1);  // other nodes are not cleared
  add("7", "sdc", "attributed", "[\"n1\",\"n2\"]", "2026-03-01T00:00:00.000Z");
  open = l.open_verdicts_on("n2", {"sdc"});
  REQUIRE(open.size() == 1);
  CHECK(open[0].job_id == "7");
  // One rule: the prolog's list, /metrics and `scoutctl nodes` agree on
  // every node, before and after a clear.
  auto agree = [&] {
    const auto m = l.metrics();
    for (auto& n : l.node_summaries("2026-03-02T00:00:00.000Z")) {
      const auto listed = static_cast<std::int64_t>(l.open_verdicts_on(n.node, {}).size());
      CHECK_MESSAGE(n.open == listed, n.node);
      CHECK_MESSAGE((m.open_by_node.count(n.node) ? m.open_by_node.at(n.node) : 0) == listed, n.node);
    }
  };
  agree();
  l.insert_gating({"", "n3", "clear", "replaced the DIMM", "test", "2026-03-01T12:00:00.000Z"});
  agree();
  CHECK(l.open_verdicts_on("n3", {}).empty());
}

TEST_CASE("the ledger's verdict kinds and statuses are libc3's one list") {
  TempDir d;
  const auto path = (d.path / "l.db").string();
  { auto l = Ledger::open(path, Ledger::Mode::kReadWrite); }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_master WHERE name='verdicts'", -1, &st, nullptr);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  std::string sql = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  std::string compact;
  for (char c : sql)
    if (c != ' ' && c != '\n') compact += c;
  CHECK(compact.find("kindIN(" + scout::c3::verdict_kinds_sql_list() + ")") != std::string::npos);
  std::string statuses;
  for (auto s : scout::c3::kAllVerdictStatuses)
    statuses += (statuses.empty() ? "'" : ",'") + std::string(scout::c3::to_string(s)) + "'";
  CHECK(compact.find("statusIN(" + statuses + ")") != std::string::npos);
}

TEST_CASE("keyed verdicts: one row per key however often committed; resolved by key") {
  TempDir t;
  auto l = Ledger::open((t.path / "l.db").string(), Ledger::Mode::kReadWrite);
  l.insert_job({.job_id = "7", .user = "bob", .uid = 1001, .launcher = "slurm"});
  VerdictRow v;
  v.job_id = "7";
  v.step = "0";
  v.kind = "stall";
  v.status = "attributed";
  v.vkey = "7.0.o0.42.1";
  const auto id = l.insert_verdict(v);
  CHECK(id > 0);
  CHECK(l.insert_verdict(v) == id);  // a retry, or a replica on a shared file
  CHECK(l.verdicts("7").size() == 1);
  CHECK(l.verdicts("7")[0].vkey == std::optional<std::string>("7.0.o0.42.1"));
  l.resolve_verdict_by_key("7.0.o0.42.1", "2026-12-01T00:00:01.000Z");
  l.resolve_verdict_by_key("7.0.o0.42.1", "2026-12-01T00:00:09.000Z");  // once
  CHECK(l.verdicts("7")[0].resolved_at == std::optional<std::string>("2026-12-01T00:00:01.000Z"));
}

TEST_CASE("import: the same verdict from every node's spool is one site row, resolution kept") {
  TempDir t;
  auto site = Ledger::open((t.path / "site.db").string(), Ledger::Mode::kReadWrite);
  auto all = [](const VerdictRow&) { return true; };
  int added = 0;
  for (int node = 1; node <= 3; ++node) {
    auto path = (t.path / ("spool-n" + std::to_string(node) + ".db")).string();
    {
      auto s = Ledger::open(path, Ledger::Mode::kReadWrite);
      s.insert_job_if_missing({.job_id = "8", .user = "bob", .uid = 1001, .launcher = "slurm"});
      // Local ids differ between nodes; the key does not.
      for (int pad = 0; pad < node; ++pad) {
        VerdictRow other;
        other.job_id = "8";
        other.step = "0";
        other.kind = "straggler";
        other.status = "attributed";
        other.vkey = "8.0.o0.42." + std::to_string(10 + pad);
        s.insert_verdict(other);
      }
      VerdictRow v;
      v.job_id = "8";
      v.step = "0";
      v.kind = "stall";
      v.status = "attributed";
      v.hosts = "[\"n3\"]";
      v.vkey = "8.0.o0.42.1";
      s.insert_verdict(v);
      if (node == 2) s.resolve_verdict_by_key("8.0.o0.42.1", "2026-12-01T00:00:05.000Z");
    }
    auto from = Ledger::open(path, Ledger::Mode::kReadOnly);
    added += site.import_job(from, "8", "spool:n" + std::to_string(node) + ":/var/spool/scout/8.db", 1001, all);
  }
  auto vs = site.verdicts("8");
  CHECK(added == 4);  // the stall once, the stragglers 10, 11, 12 once each
  CHECK(vs.size() == 4);
  int stalls = 0;
  for (auto& v : vs)
    if (v.kind == "stall") {
      ++stalls;
      CHECK(v.resolved_at == std::optional<std::string>("2026-12-01T00:00:05.000Z"));
    }
  CHECK(stalls == 1);
}

TEST_CASE("a far-future detected_at does not outlive a clear; blame counts certified users; confirmation") {
  TempDir t;
  auto l = Ledger::open((t.path / "site.db").string(), Ledger::Mode::kReadWrite);
  auto imp = [&](const char* job, const char* kind, const char* at, std::int64_t uid) {
    l.insert_job_if_missing({.job_id = job, .user = "u", .uid = uid, .launcher = "slurm"});
    VerdictRow v;
    v.job_id = job;
    v.step = "0";
    v.kind = kind;
    v.status = "attributed";
    v.hosts = "[\"n2\"]";
    v.detected_at = at;  // the user's word
    v.vkey = std::string(job) + ".0.o0.1.1";
    return l.import_verdict(v, "spool:n2:/var/spool/scout/x.db", uid);
  };
  CHECK(imp("11", "sdc", "2999-01-01T00:00:00.000Z", 1000) == 1);  // forged far-future time
  CHECK(l.open_verdicts_on("n2", {"sdc"}).size() == 1);
  l.insert_gating({"", "n2", "clear", "tested", "admin", ""});
  CHECK(l.open_verdicts_on("n2", {"sdc"}).empty());  // the clear (root's time) closes it
  // Blame: jobs and distinct origin uids since a time.
  imp("12", "stall", "2026-01-01T00:00:00.000Z", 1000);
  imp("13", "crash", "2026-01-01T00:00:00.000Z", 1000);
  imp("14", "stall", "2026-01-01T00:00:00.000Z", 1001);
  auto b = l.node_blame("n2", {"stall", "crash"}, "2000-01-01T00:00:00Z");
  CHECK(b.jobs == 3);
  CHECK(b.users == 2);
  CHECK(l.node_blame("n2", {"stall"}, "2000-01-01T00:00:00Z").jobs == 2);
  CHECK(l.node_blame("n2", {"stall", "crash"}, "2999-12-31T00:00:00Z").jobs == 0);  // outside the window
  // Only confirmed verdicts count when asked.
  CHECK(imp("15", "sdc", "2026-01-01T00:00:00.000Z", 1000) == 1);
  CHECK(l.open_verdicts_on("n2", {"sdc"}, true).empty());
  l.confirm("15.0.o0.1.1", "n2", "confirmed", "scout-epilog uid 0 on n2");
  auto open = l.open_verdicts_on("n2", {"sdc"}, true);
  REQUIRE(open.size() == 1);
  CHECK(open[0].confirmation == std::optional<std::string>("confirmed"));
  // Root's clean runs become the reference of a device class.
  CHECK_FALSE(l.reference_signature("cls", "gemm_f64", "00ff").has_value());
  l.record_reference("cls", "gemm_f64", "00ff", "abcd", "n1");
  l.record_reference("cls", "gemm_f64", "00ff", "ffff", "n3");  // the first one stays
  CHECK(l.reference_signature("cls", "gemm_f64", "00ff") == std::optional<std::string>("abcd"));
}

// Schema 9: root's check of a verdict is recorded per node. A verdict that
// names n2 and n3, confirmed by n2's epilog, refuses n2 and never n3; a
// confirmation by key never touches a row of another job or ledger.
TEST_CASE("confirmations are per (verdict key, node)") {
  TempDir t;
  auto l = Ledger::open((t.path / "site.db").string(), Ledger::Mode::kReadWrite);
  l.insert_job_if_missing({.job_id = "21", .user = "u", .uid = 1000, .launcher = "slurm"});
  VerdictRow v;
  v.job_id = "21";
  v.step = "0";
  v.kind = "sdc";
  v.status = "attributed";
  v.hosts = R"(["n2","n3"])";
  v.detected_at = "2026-01-01T00:00:00.000Z";
  v.vkey = "21.0.o0.1.1";
  REQUIRE(l.import_verdict(v, "ledgerd: user-reported by uid 1000", 1000) == 1);
  // A second row of the same submitter without a source id: not a conflict
  // on (job, origin, origin_id) (the service's rows have none).
  v.vkey = "21.0.o0.1.2";
  CHECK(l.import_verdict(v, "ledgerd: user-reported by uid 1000", 1000) == 1);
  CHECK(l.verdicts("21").size() == 2);
  l.confirm("21.0.o0.1.1", "n2", "confirmed", "scout-epilog uid 0 on n2");
  CHECK(l.open_verdicts_on("n2", {"sdc"}, true).size() == 1);
  CHECK(l.open_verdicts_on("n3", {"sdc"}, true).empty());
  auto on3 = l.open_verdicts_on("n3", {"sdc"});
  REQUIRE(on3.size() == 2);
  CHECK_FALSE(on3[0].confirmation.has_value());  // nothing recorded for n3
  CHECK(l.verdicts("21")[0].confirmation == std::optional<std::string>("confirmed"));  // the summary
  l.confirm("21.0.o0.1.1", "n3", "unconfirmed", "scout-epilog uid 0 on n3");
  CHECK(l.open_verdicts_on("n3", {"sdc"}, true).empty());
  // Who wrote a key, for the service's conflict rules.
  auto o = l.key_owner("21.0.o0.1.1");
  REQUIRE(o.has_value());
  CHECK(o->origin_uid == std::optional<std::int64_t>(1000));
  CHECK(o->confirmed_by_root);
  CHECK_FALSE(l.key_owner("21.0.o0.1.2")->confirmed_by_root);
  CHECK_FALSE(l.key_owner("22.0.o0.1.1").has_value());
}

// Root reads a user's spool only through open_untrusted: a private copy,
// checked and time-limited (the attacks of the trust review).