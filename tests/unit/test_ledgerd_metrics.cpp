// /metrics against a site ledger with a long history: the per-node state is
// data kept with each decision (schema 11), the scrape reads the ledger
// through its own connection and never waits for the service's lock (one
// scrape used to hold the service for 63 s on 30,000 decisions; root's ping
// timed out and a fail-closed epilog drained its node).
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <random>

#include <fmt/format.h>

#include "ledgerd/metrics.hpp"
#include "ledgerd/service.hpp"

using namespace scout::ledgerd;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
struct History {
  fs::path dir;
  std::optional<scout::sql::Ledger> ledger;
  std::optional<Service> service;
  History() {
    char tmpl[] = "/tmp/scout-metrics-test-XXXXXX";
    dir = mkdtemp(tmpl);
    ledger.emplace(scout::sql::Ledger::open((dir / "site.db").string(), scout::sql::Ledger::Mode::kReadWrite));
    SiteConfig cfg;
    cfg.admins = {"root"};
    service.emplace(cfg, *ledger, [](const std::string&) -> std::optional<JobInfo> { return JobInfo{1000, true, {"n1"}}; });
  }
  ~History() { fs::remove_all(dir); }
};

// The drained-now rule as the old per-scrape query decided it, over every
// decision: a node's latest decision other than an error (by id) is a drain
// or a refusal not "left as it is".
std::map<std::string, bool> drained_by_history(const std::vector<std::tuple<std::string, std::string, std::string>>& d) {
  std::map<std::string, bool> out;
  for (auto& [node, decision, reason] : d) {
    if (decision == "error") continue;
    out[node] = (decision == "drain" || decision == "refuse") && reason.find("; left as it is") == std::string::npos;
  }
  return out;
}
}  // namespace

TEST_CASE("metrics: 100,000 decisions; drained-now and drains per node as the whole history says; no scrape "
          "waits for the service") {
  History h;
  std::mt19937 rng(7);
  const char* kDecisions[] = {"drain", "keep", "error", "refuse", "suspect", "clear", "keep", "drain"};
  std::vector<std::tuple<std::string, std::string, std::string>> made;
  std::map<std::string, std::int64_t> drains;
  h.ledger->transaction([&] {
    for (int i = 0; i < 100000; ++i) {
      const std::string node = fmt::format("n{}", rng() % 60);
      const std::string decision = kDecisions[rng() % 8];
      const std::string reason = rng() % 4 == 0 ? "scout: stall; left as it is (another tool's reason)" : "scout";
      h.ledger->insert_gating({fmt::format("{}", 1000 + i / 60), node, decision, reason, "test", "", "{}"});
      made.emplace_back(node, decision, reason);
      if (decision == "drain") ++drains[node];
    }
  });
  auto reader = scout::sql::Ledger::open(h.ledger->path(), scout::sql::Ledger::Mode::kReadOnly);
  const auto stats = reader.metrics();
  CHECK(stats.drained_now == drained_by_history(made));
  CHECK(stats.drains_by_node == std::map<std::string, std::int64_t>(drains.begin(), drains.end()));

  // Control: the service answers root while nothing holds it.
  CHECK(h.service->handle({0, 0}, json{{"v", kProtocolVersion}, {"op", "ping"}}.dump())["ok"] == true);
  // A scrape with the metrics server's own reader runs to its end while a
  // request holds the service (it used to wait for the lock, and the
  // request for it).
  std::string text;
  {
    auto held = h.service->lock();
    auto scrape = std::async(std::launch::async, [&] { return render_metrics(*h.service, nullptr, &reader); });
    // Deadlock, not speed, is what is checked: the old scrape never returned while the lock was held.
    REQUIRE(scrape.wait_for(std::chrono::seconds(120)) == std::future_status::ready);
    text = scrape.get();
  }
  for (auto& [node, d] : drained_by_history(made)) {
    CAPTURE(node);
    CHECK(text.find(fmt::format("scout_node_drained{{node=\"{}\"}} {}\n", node, d ? 1 : 0)) != std::string::npos);
  }
  // Node summaries (scoutctl nodes) count the same drains from one grouped pass.
  std::int64_t all_drains = 0;
  for (auto& n : h.ledger->node_summaries(scout::sql::now_iso8601())) all_drains += n.drains_30d;
  std::int64_t expected = 0;
  for (auto& [n, c] : drains) expected += c;
  CHECK(all_drains == expected);  // every decision above was stamped now
}

TEST_CASE("metrics: a node's drained state follows each decision; errors leave it as it was; retention keeps it") {
  History h;
  auto drained = [&](const std::string& n) {
    auto m = h.ledger->metrics().drained_now;
    return m.count(n) ? std::optional<bool>(m[n]) : std::nullopt;
  };
  CHECK(!drained("n1"));
  h.ledger->insert_gating({"1", "n1", "error", "squeue timed out", "t", "", "{}"});
  CHECK(!drained("n1"));  // an error alone is no state
  h.ledger->insert_gating({"1", "n1", "drain", "scout: stall", "t", "", "{}"});
  CHECK(drained("n1") == true);
  h.ledger->insert_gating({"2", "n1", "error", "scontrol failed", "t", "", "{}"});
  CHECK(drained("n1") == true);  // the error changes nothing
  h.ledger->insert_gating({"", "n1", "clear", "DIMM replaced", "t", "", "{}"});
  CHECK(drained("n1") == false);
  h.ledger->insert_gating({"3", "n1", "refuse", "open sdc; left as it is (maint)", "t", "", "{}"});
  CHECK(drained("n1") == false);  // another tool's reason holds it
  h.ledger->insert_gating({"4", "n1", "refuse", "open sdc", "t", "", "{}"});
  CHECK(drained("n1") == true);
  CHECK(h.ledger->metrics().drains_by_node.at("n1") == 1);
}
