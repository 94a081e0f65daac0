// scout-ledgerd without sockets: the site configuration, and who may do what
// (Service with a stand-in for Slurm's job records: the uid a job belongs to
// and whether it runs). MUNGE and the server are exercised by the
// integration test with a real munged.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <filesystem>
#include <thread>

#include "ledgerd/metrics.hpp"
#include "ledgerd/service.hpp"

#include <set>
#include <sstream>
#include "ledgerd/site_config.hpp"

#include <fmt/format.h>

using namespace scout::ledgerd;
using nlohmann::json;
namespace fs = std::filesystem;

#include "tests/unit/ledgerd_test_site.hpp"

using ledgerd_test::Site;
using ledgerd_test::stall;

TEST_CASE("site config: keys, defaults, and errors that name the line") {
  auto c = parse_site_config("# scout\nledgerd = head1:7411\nadmins = root, slurm\nadmin_groups=hpcadm\n", "/etc/scout/scout.conf");
  CHECK(c.ledgerd.host == "head1");
  CHECK(c.ledgerd.port == 7411);
  CHECK(c.listen.port == 7411);  // listen defaults to ledgerd
  CHECK(c.admins == std::vector<std::string>{"root", "slurm"});
  CHECK(c.admin_groups == std::vector<std::string>{"hpcadm"});
  CHECK(c.site_ledger == "/var/lib/scout/site.db");
  CHECK_THROWS_WITH_AS(parse_site_config("ledgerd = head1\n", "f"), doctest::Contains("f:1: ledgerd"), SiteConfigError);
  CHECK_THROWS_WITH_AS(parse_site_config("\ncolour = blue\n", "f"), doctest::Contains("f:2: unknown key 'colour'"),
                       SiteConfigError);
  CHECK_THROWS_WITH_AS(parse_site_config("ledgerd = h:99999\n", "f"), doctest::Contains("port from 1 to 65535"),
                       SiteConfigError);
  CHECK_THROWS_AS(parse_site_config("site_ledger = relative.db\n", "f"), SiteConfigError);
}

TEST_CASE("ledgerd: a job's user submits and reads their own running job's verdicts, exactly once") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1", "n2", "n3"}};
  auto r = s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {stall("17.0.o0.9.1")}}});
  REQUIRE(r["ok"] == true);
  CHECK(r["added"] == 1);
  r = s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {stall("17.0.o0.9.1")}}});
  CHECK(r["added"] == 0);  // a retry after a lost reply: no duplicate
  r = s.ask(1000, {{"op", "query"}, {"job", "17"}});
  REQUIRE(r["ok"] == true);
  REQUIRE(r["verdicts"].size() == 1);
  CHECK(r["verdicts"][0]["kind"] == "stall");
  CHECK(r["verdicts"][0]["origin"] == "ledgerd: user-reported by uid 1000");
}

TEST_CASE("ledgerd: another user's job is refused, for reading and for writing; refusals are counted") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1", "n2", "n3"}};
  s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {stall("17.0.o0.9.1")}}});
  auto r = s.ask(1001, {{"op", "submit"}, {"job", "17"}, {"verdicts", {stall("17.0.o0.9.2")}}});
  CHECK(r["ok"] == false);
  CHECK(r["refused"] == "not_owner");
  r = s.ask(1001, {{"op", "query"}, {"job", "17"}});
  CHECK(r["refused"] == "not_owner");
  s.jobs["18"] = {1000, false, {}};
  r = s.ask(1000, {{"op", "submit"}, {"job", "18"}, {"verdicts", {stall("18.0.o0.9.1")}}});
  CHECK(r["refused"] == "not_running");
  r = s.ask(1000, {{"op", "submit"}, {"job", "99"}, {"verdicts", json::array()}});
  CHECK(r["refused"] == "unknown_job");
  CHECK(s.service->refused().at("not_owner") == 2);
  // Root and administrators read every job.
  CHECK(s.ask(0, {{"op", "query"}, {"job", "17"}})["verdicts"].size() == 1);
}

TEST_CASE("ledgerd: decisions are root's, clears are administrators', with a reason") {
  Site s;
  auto r = s.ask(1000, {{"op", "gating"}, {"job", "17"}, {"node", "n3"}, {"decision", "drain"}, {"reason", "x"}});
  CHECK(r["refused"] == "not_root");
  r = s.ask(0, {{"op", "gating"}, {"job", "17"}, {"node", "n3"}, {"decision", "drain"}, {"reason", "scout: stall"},
                {"decided_by", "scout-epilog uid 0 on n3"}});
  CHECK(r["ok"] == true);
  CHECK(s.ask(1000, {{"op", "clear"}, {"node", "n3"}, {"reason", "fixed"}})["refused"] == "not_admin");
  CHECK(s.ask(0, {{"op", "clear"}, {"node", "n3"}})["refused"] == "malformed");
  r = s.ask(0, {{"op", "clear"}, {"node", "n3"}, {"reason", "replaced DIMM"}});
  CHECK(r["ok"] == true);
  r = s.ask(0, {{"op", "nodes"}});
  REQUIRE(r["nodes"].size() == 1);
  CHECK(r["nodes"][0]["node"] == "n3");
  CHECK(r["nodes"][0]["drains_7d"] == 1);
  CHECK(r["nodes"][0]["last_decision"] == "clear");
  CHECK(s.ask(1000, {{"op", "nodes"}})["refused"] == "not_admin");
  r = s.ask(0, {{"op", "node"}, {"node", "n3"}});
  REQUIRE(r["decisions"].size() == 2);
  CHECK(r["decisions"][1]["decision"] == "clear");
  CHECK(s.ask(1000, {{"op", "node"}, {"node", "n3"}})["refused"] == "not_admin");
}

TEST_CASE("ledgerd: malformed and wrong-version requests get an error naming what was expected") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1", "n2", "n3"}};
  CHECK(s.service->handle({0, 0}, "not json")["refused"] == "malformed");
  CHECK(s.ask(0, {{"v", 1}, {"op", "ping"}})["refused"] == "version");
  CHECK(s.ask(0, {{"op", "explode"}})["refused"] == "malformed");
  auto bad = stall("17.0.o0.9.1");
  bad["kind"] = "meltdown";
  CHECK(s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {bad}}})["refused"] == "malformed");
  bad = stall("99.0.o0.9.1");  // a key of another job
  CHECK(s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {bad}}})["refused"] == "malformed");
  bad = stall("17.0.o0.9.1");
  bad["hosts"] = {"n3; rm -rf /"};
  CHECK(s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {bad}}})["refused"] == "malformed");
  bad = stall("17.0.o0.9.1");
  bad["evidence"] = {{"blob", std::string(70000, 'x')}};
  CHECK(s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {bad}}})["refused"] == "too_large");
  auto p = s.ask(1000, {{"op", "ping"}});
  CHECK(p["ok"] == true);
  CHECK(p["role"] == "user");
  CHECK(s.ask(0, {{"op", "ping"}})["role"] == "root");
}

TEST_CASE("metrics: Prometheus text exposition of verdicts, open verdicts, drains and refusals") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1", "n2", "n3"}};
  s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {stall("17.0.o0.9.1")}}});
  s.ask(1001, {{"op", "query"}, {"job", "17"}});
  s.ask(0, {{"op", "gating"}, {"job", "17"}, {"node", "n3"}, {"decision", "drain"}, {"reason", "scout: stall"}});
  const std::string text = render_metrics(*s.service, nullptr);
  CHECK(text.find("scout_verdicts{kind=\"stall\",status=\"attributed\"} 1\n") != std::string::npos);
  CHECK(text.find("scout_open_verdicts{node=\"n3\"} 1\n") != std::string::npos);
  CHECK(text.find("scout_drains_total{node=\"n3\"} 1\n") != std::string::npos);
  CHECK(text.find("scout_node_drained{node=\"n3\"} 1\n") != std::string::npos);
  CHECK(text.find("scout_ledgerd_refused_total{reason=\"not_owner\"} 1\n") != std::string::npos);
  CHECK(text.find("scout_ledgerd_requests_total{op=\"submit\"} 1\n") != std::string::npos);
  // The exposition format: every family has HELP and TYPE before its
  // samples; every sample is NAME{LABELS} VALUE with a known family name.
  std::set<std::string> typed;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream f(line.substr(7));
      std::string name, type;
      f >> name >> type;
      CHECK((type == "gauge" || type == "counter"));
      typed.insert(name);
      continue;
    }
    const auto brace = line.find_first_of("{ ");
    REQUIRE(brace != std::string::npos);
    CHECK(typed.count(line.substr(0, brace)) == 1);
    const auto sp = line.rfind(' ');
    CHECK(line.find_first_not_of("0123456789.", sp + 1) == std::string::npos);
    if (line[brace] == '{') CHECK(line[sp - 1] == '}');
  }
}

TEST_CASE("backlog: a scoutd's unforwarded verdicts reach /metrics by node; the oldest's age grows; cleared") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1", "n2", "n3"}};
  s.jobs["18"] = {1000, true, {"n3"}};
  auto backlog = [](const char* job, const char* node, std::int64_t pending, double oldest) {
    return json{{"op", "backlog"}, {"job", job}, {"node", node}, {"pending", pending}, {"oldest_s", oldest}};
  };
  CHECK(s.ask(1000, backlog("17", "n3", 3, 120))["ok"] == true);
  CHECK(s.ask(1000, backlog("18", "n3", 2, 400))["ok"] == true);
  auto b = s.service->backlogs(std::chrono::steady_clock::now() + std::chrono::seconds(10));
  REQUIRE(b.count("n3") == 1);
  CHECK(b["n3"].pending == 5);
  CHECK(b["n3"].oldest_s >= 410);   // the older job's, and it grew since the report
  CHECK(b["n3"].oldest_s < 420);
  const std::string text = render_metrics(*s.service, nullptr);
  CHECK(text.find("# TYPE scout_forward_backlog_verdicts gauge\nscout_forward_backlog_verdicts{node=\"n3\"} 5\n") !=
        std::string::npos);
  CHECK(text.find("scout_forward_backlog_oldest_seconds{node=\"n3\"} ") != std::string::npos);
  // Another user, a node outside the allocation, a job that does not run,
  // malformed numbers: refused, nothing recorded.
  CHECK(s.ask(1001, backlog("17", "n3", 9, 1))["refused"] == "not_owner");
  CHECK(s.ask(1000, backlog("17", "n9", 9, 1))["refused"] == "not_allocated");
  s.jobs["19"] = {1000, false, {"n1"}};
  CHECK(s.ask(1000, backlog("19", "n1", 9, 1))["refused"] == "not_running");
  CHECK(s.ask(1000, backlog("17", "n3", -1, 1))["refused"] == "malformed");
  CHECK(s.ask(1000, backlog("17", "n3", 1, -5))["refused"] == "malformed");
  CHECK(s.ask(1000, backlog("17", "n3 x", 1, 5))["refused"] == "malformed");
  CHECK(s.ask(1000, {{"op", "backlog"}, {"job", "17"}, {"node", "n3"}, {"pending", 1}, {"oldest_s", "x"}})["refused"] ==
        "malformed");
  CHECK(s.service->backlogs(std::chrono::steady_clock::now())["n3"].pending == 5);
  // An empty backlog is reported: gone; root's epilog forwarding the job's
  // leftovers: its backlogs are done with.
  CHECK(s.ask(1000, backlog("17", "n3", 0, 0))["ok"] == true);
  CHECK(s.service->backlogs(std::chrono::steady_clock::now())["n3"].pending == 2);
  CHECK(s.ask(0, {{"op", "submit"}, {"job", "18"}, {"verdicts", json::array()}})["ok"] == true);
  CHECK(s.service->backlogs(std::chrono::steady_clock::now()).empty());
  CHECK(render_metrics(*s.service, nullptr).find("scout_forward_backlog_verdicts{") == std::string::npos);
}

namespace {
// The metric names (scout_...) in a query.
std::set<std::string> metric_names(const std::string& expr) {
  std::set<std::string> out;
  for (std::size_t i = expr.find("scout_"); i != std::string::npos; i = expr.find("scout_", i)) {
    if (i > 0 && (std::isalnum(static_cast<unsigned char>(expr[i - 1])) || expr[i - 1] == '_')) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[j])) || expr[j] == '_')) ++j;
    out.insert(expr.substr(i, j - i));
    i = j;
  }
  return out;
}
std::string read_text(const std::string& rel) {
  const char* src = std::getenv("top_srcdir");
  std::ifstream in(std::string(src ? src : "..") + "/" + rel);
  REQUIRE_MESSAGE(in.good(), "cannot read ", rel);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
}  // namespace

TEST_CASE("contrib: every dashboard query and alert names metrics scout-ledgerd exports") {
  Site s;
  std::set<std::string> exported;
  std::istringstream text(render_metrics(*s.service, nullptr));
  for (std::string line; std::getline(text, line);)
    if (line.rfind("# TYPE ", 0) == 0) exported.insert(line.substr(7, line.find(' ', 7) - 7));
  CHECK(exported.count("scout_forward_backlog_oldest_seconds") == 1);
  const json dash = json::parse(read_text("contrib/grafana/scout-dashboard.json"));
  std::size_t queries = 0;
  for (auto& p : dash.at("panels"))
    for (auto& t : p.at("targets")) {
      const std::string expr = t.at("expr").get<std::string>();
      CAPTURE(expr);
      const auto names = metric_names(expr);
      CHECK_FALSE(names.empty());
      for (auto& n : names) CHECK(exported.count(n) == 1);
      ++queries;
    }
  CHECK(queries >= 10);
  std::istringstream rules(read_text("contrib/prometheus/scout-alerts.yml"));
  std::size_t exprs = 0;
  for (std::string line; std::getline(rules, line);) {
    const auto k = line.find("expr: ");
    if (k == std::string::npos) continue;
    ++exprs;
    const std::string expr = line.substr(k + 6);
    CAPTURE(expr);
    for (auto& n : metric_names(expr)) CHECK(exported.count(n) == 1);
  }
  CHECK(exprs == 4);
}

// The hostile-site review (issue 21): each attack on the service, refused,
// with the legitimate path beside it.
TEST_CASE("attack: a user's verdict may name only nodes of her job's allocation, as Slurm reports it") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1", "n2"}};
  auto bad = stall("17.0.o0.9.1");
  bad["hosts"] = {"n2", "n7"};  // n7 was never hers
  auto r = s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {bad}}});
  CHECK(r["refused"] == "not_allocated");
  CHECK(r["error"].get<std::string>().find("n7") != std::string::npos);
  CHECK(s.ask(0, {{"op", "query"}, {"job", "17"}})["verdicts"].empty());  // nothing written
  bad["hosts"] = {"n2"};
  CHECK(s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {bad}}})["added"] == 1);
  // Slurm without an allocation for the job: nothing a user says is taken.
  s.jobs["19"] = {1000, true, {}};
  CHECK(s.ask(1000, {{"op", "submit"}, {"job", "19"}, {"verdicts", {stall("19.0.o0.9.1")}}})["refused"] ==
        "unknown_job");
}

TEST_CASE("attack: root's copy wins a key conflict; a user never changes root's or a confirmed row") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1", "n2", "n3"}};
  auto mine = stall("17.0.o0.9.1");
  mine["hosts"] = {"n1", "n2", "n3"};  // the user's version, first
  REQUIRE(s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {mine}}})["added"] == 1);
  auto roots = stall("17.0.o0.9.1");  // root's epilog forwards the honest copy
  auto r = s.ask(0, {{"op", "submit"}, {"job", "17"}, {"verdicts", {roots}}});
  CHECK(r["replaced"] == 1);
  auto q = s.ask(0, {{"op", "query"}, {"job", "17"}});
  REQUIRE(q["verdicts"].size() == 1);
  CHECK(q["verdicts"][0]["hosts"] == json({"n3"}));
  CHECK(q["verdicts"][0]["origin"] == "ledgerd: forwarded by uid 0");
  // She resubmits the key to close it, or to change it: root's row stays.
  mine["resolved_at"] = "2026-12-01T00:00:01.000Z";
  r = s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {mine}}});
  CHECK(r["ok"] == true);
  REQUIRE(r["unchanged"].size() == 1);
  CHECK(r["unchanged"][0]["why"] == "root's row");
  q = s.ask(0, {{"op", "query"}, {"job", "17"}});
  CHECK(q["verdicts"][0]["resolved_at"].is_null());
  CHECK(q["verdicts"][0]["hosts"] == json({"n3"}));
  // Her own row (no root copy, no confirmation) she may close.
  auto own = stall("17.0.o0.9.2");
  s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {own}}});
  own["resolved_at"] = "2026-12-01T00:00:02.000Z";
  s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {own}}});
  CHECK(s.ask(0, {{"op", "query"}, {"job", "17"}})["verdicts"][1]["resolved_at"] == "2026-12-01T00:00:02.000Z");
}

TEST_CASE("attack: a confirmation is recorded for the node whose epilog checked, never for the others") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1", "n2", "n3"}};
  auto v = stall("17.0.o0.9.1");
  v["kind"] = "sdc";
  v["hosts"] = {"n1", "n2", "n3"};
  REQUIRE(s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {v}}})["added"] == 1);
  REQUIRE(s.ask(0, {{"op", "gating"}, {"job", "17"}, {"node", "n3"}, {"decision", "drain"}, {"reason", "scout: sdc"},
                    {"evidence", {{"confirmed", {"17.0.o0.9.1"}}}}})["ok"] == true);
  auto n3 = s.ask(0, {{"op", "node"}, {"node", "n3"}});
  REQUIRE(n3["open_verdicts"].size() == 1);
  CHECK(n3["open_verdicts"][0]["confirmation"] == "confirmed");
  auto n1 = s.ask(0, {{"op", "node"}, {"node", "n1"}});
  REQUIRE(n1["open_verdicts"].size() == 1);
  CHECK(n1["open_verdicts"][0]["confirmation"].is_null());  // the prolog of n1 does not refuse it
}

TEST_CASE("attack: the job's owner is Slurm's word, not the first submitter's") {
  Site s;
  s.jobs["17"] = {1000, false, {"n1"}};
  // Root's epilog is the first (and only) to write for the job.
  REQUIRE(s.ask(0, {{"op", "gating"}, {"job", "17"}, {"node", "n1"}, {"decision", "keep"}, {"reason", "x"}})["ok"] == true);
  auto q = s.ask(1000, {{"op", "query"}, {"job", "17"}});
  CHECK(q["ok"] == true);
  CHECK(s.ask(1001, {{"op", "query"}, {"job", "17"}})["refused"] == "not_owner");
  CHECK(s.ledger->job("17")->uid == 1000);
}

TEST_CASE("attack: deep, huge and unknown requests are refused without re-serialising them; labels stay fixed") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1", "n2", "n3"}};
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  auto r = s.service->handle({1000, 1000}, deep);
  CHECK(r["refused"] == "too_large");
  const std::string deep200k = "{\"v\":" + std::string(200000, '[') + std::string(200000, ']') + "}";
  CHECK(s.service->handle({1000, 1000}, deep200k.substr(0, 1000)).value("refused", "") == "malformed");
  const std::string deep_v = "{\"v\":" + std::string(100000, '[') + std::string(100000, ']') + ",\"op\":\"ping\"}";
  r = s.service->handle({1000, 1000}, deep_v);
  CHECK(r["refused"] == "malformed");  // too deep, checked before parsing
  const std::string shallow_bad_v = R"({"v":[[[1]]],"op":"ping"})";
  r = s.service->handle({1000, 1000}, shallow_bad_v);
  CHECK(r["refused"] == "version");
  CHECK(r["error"].get<std::string>().find("an array") != std::string::npos);
  auto v = stall("17.0.o0.9.1");
  json ranks = json::array();
  json* at = &ranks;
  for (int i = 0; i < 40; ++i) {
    at->push_back(json::array());
    at = &(*at)[0];
  }
  v["ranks"] = ranks;
  CHECK(s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {v}}})["refused"] == "malformed");
  for (int i = 0; i < 50; ++i) s.ask(1000, {{"op", "op" + std::to_string(i)}});
  CHECK(s.service->requests().size() <= 8);  // "unknown" and the real operations only
  CHECK(s.service->requests().at("unknown") >= 50);
}

TEST_CASE("attack: a user's verdicts per job are bounded") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1"}};
  json batch = json::array();
  for (int b = 0; b < 10; ++b) {
    batch = json::array();
    for (int i = 0; i < 1000; ++i) {
      auto v = stall(fmt::format("17.0.o0.9.{}", b * 1000 + i));
      v["hosts"] = {"n1"};
      batch.push_back(v);
    }
    REQUIRE(s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", batch}})["ok"] == true);
  }
  auto v = stall("17.0.o0.9.99999");
  v["hosts"] = {"n1"};
  CHECK(s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {v}}})["refused"] == "quota");
}

TEST_CASE("protocol 2: the reply echoes the request's nonce; the service's user comes from the site config") {
  Site s;
  auto r = s.ask(1000, {{"op", "ping"}, {"nonce", "0123abcd"}});
  CHECK(r["nonce"] == "0123abcd");
  r = s.ask(1000, {{"op", "nodes"}, {"nonce", "0123abcd"}});  // refusals too
  CHECK(r["refused"] == "not_admin");
  CHECK(r["nonce"] == "0123abcd");
  CHECK_FALSE(s.ask(1000, {{"op", "ping"}, {"nonce", "not hex!"}}).contains("nonce"));
  CHECK_FALSE(s.ask(1000, {{"op", "ping"}})["ok"] == false);
  CHECK(ledgerd_uid(parse_site_config("ledgerd = h:1\n", "f")) == 0);  // root by default
  CHECK(ledgerd_uid(parse_site_config("ledgerd_user = nobody\n", "f")) == 65534);
  CHECK(ledgerd_uid(parse_site_config("ledgerd_user = 4242\n", "f")) == 4242);
  CHECK_THROWS_WITH_AS(ledgerd_uid(parse_site_config("ledgerd_user = no-such-user-here\n", "f")),
                       doctest::Contains("no such user"), SiteConfigError);
  CHECK_THROWS_AS(parse_site_config("ledgerd_user = a b\n", "f"), SiteConfigError);
}

// Found by make bench: the service's lock is released while Slurm answers,
// and a second request then overwrote the first one's nonce (and lock).
TEST_CASE("concurrent requests while Slurm answers slowly: each reply carries its own nonce") {
  Site s;
  s.jobs["17"] = {1000, true, {"n1"}};
  SiteConfig cfg;
  Service slow(cfg, *s.ledger, [](const std::string&) -> std::optional<JobInfo> {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return JobInfo{1000, true, {"n1"}};
  });
  json a, b;
  std::thread t([&] { a = slow.handle({1000, 1000}, R"({"v":2,"op":"query","job":"17","nonce":"aaaa"})"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the first waits for Slurm now
  b = slow.handle({1000, 1000}, R"({"v":2,"op":"ping","nonce":"bbbb"})");
  t.join();
  CHECK(a["nonce"] == "aaaa");
  CHECK(a["ok"] == true);
  CHECK(b["nonce"] == "bbbb");
}
