// scout-ledgerd without sockets: the site configuration, and who may do what
// (Service with a stand-in for Slurm's job records: the uid a job belongs to
// and whether it runs). MUNGE and the server are exercised by the
// integration test with a real munged.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include "ledgerd/metrics.hpp"
#include "ledgerd/service.hpp"

#include <set>
#include <sstream>
#include "ledgerd/site_config.hpp"

using namespace scout::ledgerd;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
struct Site {
  fs::path dir;
  std::optional<scout::sql::Ledger> ledger;
  std::map<std::string, JobInfo> jobs;
  std::optional<Service> service;
  Site() {
    char tmpl[] = "/tmp/scout-ledgerd-test-XXXXXX";
    dir = mkdtemp(tmpl);
    ledger.emplace(scout::sql::Ledger::open((dir / "site.db").string(), scout::sql::Ledger::Mode::kReadWrite));
    SiteConfig cfg;
    cfg.admins = {"root"};
    service.emplace(cfg, *ledger, [this](const std::string& j) -> std::optional<JobInfo> {
      auto it = jobs.find(j);
      if (it == jobs.end()) return std::nullopt;
      return it->second;
    });
  }
  ~Site() { fs::remove_all(dir); }
  json ask(uid_t uid, json req) {
    if (!req.contains("v")) req["v"] = 1;
    return service->handle({uid, uid}, req.dump());
  }
};

json stall(const std::string& vkey) {
  return {{"vkey", vkey}, {"step", "0"}, {"kind", "stall"}, {"status", "attributed"}, {"ranks", {4}},
          {"hosts", {"n3"}}, {"evidence", {{"rule", "behind"}}}, {"detected_at", "2026-12-01T00:00:00.000Z"}};
}
}  // namespace

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
  s.jobs["18"] = {1000, false};
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
  CHECK(s.ask(0, {{"v", 2}, {"op", "ping"}})["refused"] == "version");
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
