// The forwarder's backlog reports: while the service refuses the verdicts
// (or cannot be reached), the backlog (verdicts not forwarded, the age of
// the oldest) is reported after every failed send; once everything got
// through, one report of an empty backlog follows.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "scoutd/beside/forwarder.hpp"

using namespace scout::scoutd;
using nlohmann::json;

namespace {
json new_verdict(const std::string& key) {
  return {{"op", "new"},
          {"verdict", {{"id", 1}, {"job", "17"}, {"step", "0"}, {"kind", "stall"}, {"status", "attributed"},
                       {"ranks", {4}}, {"hosts", {"n3"}}, {"evidence", json::object()},
                       {"detected_at", "2026-12-01T00:00:00.000Z"}, {"vkey", key}}}};
}
}  // namespace

TEST_CASE("forwarder: the backlog is reported while sends fail, and reported empty once they get through") {
  std::atomic<bool> accepted{false};
  std::mutex mu;
  std::vector<std::pair<std::size_t, double>> reports;
  std::atomic<int> sent{0};
  Forwarder f(
      "17",
      [&](const std::string&, const json& batch) {
        if (!accepted) throw std::runtime_error("refused: internal");
        sent += static_cast<int>(batch.size());
      },
      [](const std::string&) {},
      [&](std::size_t pending, double oldest_s) {
        std::lock_guard lk(mu);
        reports.emplace_back(pending, oldest_s);
      });
  f.take(json::array({new_verdict("17.0.o0.9.1"), new_verdict("17.0.o0.9.2")}));
  // Reported before the first send and after its failure, then after the
  // retry's failure 1 s later.
  for (int i = 0; i < 60; ++i) {
    {
      std::lock_guard lk(mu);
      if (reports.size() >= 3) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(f.pending() == 2);
  {
    std::lock_guard lk(mu);
    REQUIRE(reports.size() >= 3);
    CHECK(reports[0].first == 2);
    CHECK(reports[2].first == 2);
    CHECK(reports[2].second >= 0.9);  // the oldest's age, growing
    CHECK(reports[2].second > reports[0].second);
  }
  accepted = true;
  for (int i = 0; i < 100 && f.pending() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int i = 0; i < 40; ++i) {
    {
      std::lock_guard lk(mu);
      if (reports.back().first == 0) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(f.pending() == 0);
  CHECK(sent == 2);
  CHECK(f.oldest_s() == 0);
  std::lock_guard lk(mu);
  CHECK(reports.back().first == 0);
}
