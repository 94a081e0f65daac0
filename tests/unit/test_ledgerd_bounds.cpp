// Nothing a user sends or a node's history holds makes a reply over MUNGE's
// 1 MiB or the service's storage grow without bound: node and query answer
// in pages, quotas count bytes, root's decision ends a job's backlog report,
// and retention deletes old decisions while the node's state stays exact.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "tests/unit/ledgerd_test_site.hpp"

using namespace scout::ledgerd;
using nlohmann::json;
using ledgerd_test::Site;
using ledgerd_test::stall;

namespace {
json big_stall(const std::string& vkey, std::size_t evidence_bytes) {
  json v = stall(vkey);
  v["evidence"] = {{"rule", "behind"}, {"note", std::string(evidence_bytes, 'x')}};
  return v;
}
}  // namespace

TEST_CASE("bounds: a node's 3,000 decisions come in pages under the reply bound; the pages are the whole history") {
  Site s;
  const std::string ev = json{{"note", std::string(4000, 'e')}}.dump();
  s.ledger->transaction([&] {
    for (int i = 0; i < 3000; ++i)
      s.ledger->insert_gating({fmt::format("{}", 100 + i), "n3", i % 2 ? "keep" : "drain", fmt::format("d{}", i),
                               "t", "", ev});
  });
  s.ledger->insert_gating({"", "n3", "clear", "DIMM replaced", "t", "", "{}"});
  // Control: the first page is answered, newest decision last.
  auto r = s.ask(0, {{"op", "node"}, {"node", "n3"}});
  REQUIRE(r["ok"] == true);
  CHECK(r["more"] == true);
  CHECK(r["decisions"].back()["decision"] == "clear");
  CHECK(r["last_clear"]["reason"] == "DIMM replaced");
  std::vector<std::string> reasons;
  for (int page = 0; page < 100; ++page) {
    CHECK(r.dump().size() < (std::size_t{900} << 10));  // the server's bound, below MUNGE's 1 MiB
    std::vector<std::string> older;
    for (auto& d : r["decisions"]) older.push_back(d["reason"]);
    reasons.insert(reasons.begin(), older.begin(), older.end());
    if (!r.value("more", false)) break;
    r = s.ask(0, {{"op", "node"}, {"node", "n3"}, {"before", r["before"]}});
    REQUIRE(r["ok"] == true);
  }
  REQUIRE(reasons.size() == 3001);
  for (int i = 0; i < 3000; ++i) CHECK(reasons[static_cast<std::size_t>(i)] == fmt::format("d{}", i));
  CHECK(s.ask(0, {{"op", "node"}, {"node", "n3"}, {"before", "x"}})["refused"] == "malformed");
}

TEST_CASE("bounds: a job's verdicts come in pages; a user's bytes per job are bounded, not only her rows") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1", "n2", "n3"}};
  // 60 KiB of evidence each: 60 verdicts (3.6 MB) take several pages.
  for (int b = 0; b < 6; ++b) {
    json batch = json::array();
    for (int i = 0; i < 10; ++i) batch.push_back(big_stall(fmt::format("17.0.o0.9.{}", b * 10 + i), 60000));
    REQUIRE(s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", batch}})["ok"] == true);
  }
  std::set<std::string> keys;
  json r = s.ask(1000, {{"op", "query"}, {"job", "17"}});
  int pages = 0;
  for (; pages < 100; ++pages) {
    REQUIRE(r["ok"] == true);
    CHECK(r.dump().size() < (std::size_t{900} << 10));
    for (auto& v : r["verdicts"]) keys.insert(v["vkey"].get<std::string>());
    if (!r.value("more", false)) break;
    r = s.ask(1000, {{"op", "query"}, {"job", "17"}, {"after", r["after"]}});
  }
  CHECK(keys.size() == 60);
  CHECK(pages >= 4);
  // The per-job byte quota (4 MiB): 5 more of 60 KiB go through (3.9 MB), then she is refused.
  json batch = json::array();
  for (int i = 0; i < 5; ++i) batch.push_back(big_stall(fmt::format("17.0.o0.9.x{}", i), 60000));
  CHECK(s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", batch}})["ok"] == true);
  json more = json::array();
  for (int i = 0; i < 10; ++i) more.push_back(big_stall(fmt::format("17.0.o0.9.y{}", i), 60000));
  auto q = s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", more}});
  CHECK(q["refused"] == "quota");
  CHECK(q["error"].get<std::string>().find("bytes") != std::string::npos);
  // Root is not bound by a user's quota.
  CHECK(s.ask(0, {{"op", "submit"}, {"job", "17"}, {"verdicts", more}})["ok"] == true);
}

TEST_CASE("bounds: root's decision at the job's end clears its backlog report on that node") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1", "n3"}};
  auto backlog = [](const char* node) {
    return json{{"op", "backlog"}, {"job", "17"}, {"node", node}, {"pending", 4}, {"oldest_s", 30}};
  };
  REQUIRE(s.ask(1000, backlog("n3"))["ok"] == true);
  REQUIRE(s.ask(1000, backlog("n1"))["ok"] == true);
  CHECK(s.service->backlogs(std::chrono::steady_clock::now()).count("n3") == 1);
  s.jobs["17"].running = false;
  REQUIRE(s.ask(0, {{"op", "gating"}, {"job", "17"}, {"node", "n3"}, {"decision", "keep"}, {"reason", "x"}})["ok"] ==
          true);
  auto b = s.service->backlogs(std::chrono::steady_clock::now());
  CHECK(b.count("n3") == 0);  // its epilog ran
  CHECK(b.count("n1") == 1);  // not yet
}

TEST_CASE("bounds: retention deletes old decisions, never a node's current state or its last clear") {
  Site s;
  const std::string old_day = "2020-01-01T00:00:00.000Z";
  for (int i = 0; i < 50; ++i) s.ledger->insert_gating({"1", "n1", "keep", "old", "t", old_day, "{}"});
  s.ledger->insert_gating({"", "n1", "clear", "repaired", "t", "2020-01-02T00:00:00.000Z", "{}"});
  s.ledger->insert_gating({"2", "n1", "drain", "scout: stall", "t", "2020-01-03T00:00:00.000Z", "{}"});
  s.ledger->insert_gating({"3", "n2", "keep", "new", "t", "", "{}"});
  CHECK(s.ledger->prune_decisions("2021-01-01T00:00:00.000Z", 1000) == 50);
  auto rest = s.ledger->node_gating("n1");
  REQUIRE(rest.size() == 2);
  CHECK(rest[0].decision == "clear");
  CHECK(rest[1].decision == "drain");
  CHECK(s.ledger->metrics().drained_now.at("n1") == true);
  CHECK(s.ledger->node_gating("n2").size() == 1);
  CHECK(s.ledger->prune_decisions("2021-01-01T00:00:00.000Z", 1000) == 0);
}

// Slurm gives an id again when its counter wraps or its state is lost. The
// ledger tells the two jobs apart by Slurm's submission time.
TEST_CASE("attack: a reused job id shows nothing of the earlier job to anyone; its keys are free; its rows are kept") {
  Site s;
  const auto now_s = [] { return scout::sql::now_unix_ms() / 1000; };
  s.jobs["17"] = JobInfo{1001, true, {"n3"}, now_s() - 7200};
  // Control: the first job's user stores and reads her verdict; root's
  // epilog confirms it on n3.
  auto r = s.ask(1001, {{"op", "submit"}, {"job", "17"}, {"verdicts", {stall("17.0.o0.1.1")}}});
  REQUIRE(r["ok"] == true);
  CHECK(r["added"] == 1);
  REQUIRE(s.ask(1001, {{"op", "query"}, {"job", "17"}})["verdicts"].size() == 1);
  REQUIRE(s.ask(0, {{"op", "gating"}, {"job", "17"}, {"node", "n3"}, {"decision", "suspect"}, {"reason", "x"},
                    {"evidence", {{"confirmed", {"17.0.o0.1.1", "17.0.o0.1.77"}}}}})["ok"] == true);
  // A retired key's form is refused at the door (she would hold the name
  // her earlier verdict is retired to, and every later renewal would fail).
  r = s.ask(1001, {{"op", "submit"}, {"job", "17"}, {"verdicts", {stall("17.0.o0.1.1@1")}}});
  CHECK(r["refused"] == "malformed");
  // Slurm gives 17 to another user's job, submitted a second later (its
  // times have whole seconds).
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  s.jobs["17"] = JobInfo{1002, true, {"n3"}, now_s()};
  s.restart_service();
  r = s.ask(1002, {{"op", "query"}, {"job", "17"}});
  REQUIRE(r["ok"] == true);
  CHECK(r["verdicts"].empty());
  CHECK(s.ask(0, {{"op", "query"}, {"job", "17"}})["verdicts"].empty());  // root's epilog: not this job's either
  CHECK(s.ask(1001, {{"op", "query"}, {"job", "17"}})["refused"] == "not_owner");
  // Her verdict under the key the earlier job used: added, not refused as
  // another submitter's row.
  json mine = stall("17.0.o0.1.1");
  mine["ranks"] = {2};
  r = s.ask(1002, {{"op", "submit"}, {"job", "17"}, {"verdicts", {mine}}});
  REQUIRE(r["ok"] == true);
  CHECK(r["added"] == 1);
  CHECK_FALSE(r.contains("unchanged"));
  for (uid_t who : {1002u, 0u}) {
    CAPTURE(who);
    r = s.ask(who, {{"op", "query"}, {"job", "17"}});
    REQUIRE(r["verdicts"].size() == 1);
    CHECK(r["verdicts"][0]["ranks"] == json{2});
    CHECK(r["verdicts"][0]["vkey"] == "17.0.o0.1.1");
    CHECK(r["verdicts"][0].value("confirmation", json()).is_null());
  }
  // Root's decision at the new job's end changes nothing of that.
  REQUIRE(s.ask(0, {{"op", "gating"}, {"job", "17"}, {"node", "n3"}, {"decision", "keep"}, {"reason", "y"}})["ok"] ==
          true);
  CHECK(s.ask(1002, {{"op", "query"}, {"job", "17"}})["verdicts"].size() == 1);
  // The earlier job's row is kept under a retired key, with root's
  // confirmation, and the job row is the new job's.
  int retired = 0;
  for (auto& v : s.ledger->verdicts("17"))  // every row, retired ones too
    if (v.vkey && v.vkey->find('@') != std::string::npos) {
      ++retired;
      CHECK(v.vkey->rfind("17.0.o0.1.1@", 0) == 0);
      CHECK(v.ranks == "[4]");
      CHECK(v.confirmation.value_or("") == "confirmed");
    }
  CHECK(retired == 1);
  REQUIRE(s.ledger->job("17").has_value());
  CHECK(s.ledger->job("17")->uid == 1002);
  // A job first recorded without Slurm's word (uid -1, this host's clock)
  // is adopted when Slurm answers, never renewed.
  s.jobs.erase("19");
  REQUIRE(s.ask(0, {{"op", "submit"}, {"job", "19"}, {"verdicts", {stall("19.0.o0.1.1")}}})["ok"] == true);
  s.jobs["19"] = JobInfo{1003, true, {"n3"}, now_s() + 3600};
  s.restart_service();
  r = s.ask(1003, {{"op", "query"}, {"job", "19"}});
  REQUIRE(r["ok"] == true);
  CHECK(r["verdicts"].size() == 1);
}

TEST_CASE("bounds: the site's 1,200 nodes come in pages in name order; every node once; a bad cursor refused") {
  Site s;
  s.ledger->transaction([&] {
    for (int i = 0; i < 1200; ++i)
      s.ledger->insert_gating({fmt::format("{}", 100 + i), fmt::format("node{:04d}", i), "keep", "ok", "t", "", "{}"});
  });
  // Control: the first page, within the bounds, says there is more.
  auto r = s.ask(0, {{"op", "nodes"}});
  REQUIRE(r["ok"] == true);
  CHECK(r["more"] == true);
  CHECK(r["nodes"].size() == static_cast<std::size_t>(kMaxPageRows));
  CHECK(r.dump().size() < kReplyPageBytes + 4096);
  std::vector<std::string> seen;
  for (auto& n : r["nodes"]) seen.push_back(n["node"]);
  for (int page = 0; r.value("more", false) && page < 10; ++page) {
    r = s.ask(0, {{"op", "nodes"}, {"after", r["after"]}});
    REQUIRE(r["ok"] == true);
    for (auto& n : r["nodes"]) seen.push_back(n["node"]);
  }
  CHECK_FALSE(r.contains("more"));
  REQUIRE(seen.size() == 1200);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 1200);
  CHECK(s.ask(0, {{"op", "nodes"}, {"after", 7}})["refused"] == "malformed");
  CHECK(s.ask(0, {{"op", "nodes"}, {"after", std::string(300, 'n')}})["refused"] == "malformed");
  CHECK(s.ask(0, {{"op", "nodes"}, {"after", "a b"}})["ok"] == true);  // any stored name can end a page
  CHECK(s.ask(1001, {{"op", "nodes"}})["refused"] == "not_admin");
}
