// scoutd options: numbers are strict, errors name the option and what was
// expected.
#include <doctest/doctest.h>

#include <vector>

#include "scoutd/daemon/config.hpp"

using namespace scout::scoutd;

namespace {
ScoutdConfig parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  std::string prog = "scoutd";
  argv.push_back(prog.data());
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ScoutdConfig c;
  parse_scoutd_args(static_cast<int>(argv.size() - 1), argv.data(), c);
  return c;
}
}  // namespace

TEST_CASE("valid options") {
  auto c = parse({"--job-id", "42", "--ranks", "8", "--ledger", "/tmp/x.db", "--stall-threshold", "2.5"});
  CHECK(c.stall_threshold_s == 2.5);
  CHECK_NOTHROW(validate(c));
}

TEST_CASE("bad values name the option and what was expected") {
  CHECK_THROWS_WITH_AS(parse({"--stall-threshold", "abc"}),
                       doctest::Contains("--stall-threshold: 'abc' is not a number"), ConfigError);
  CHECK_THROWS_WITH_AS(parse({"--stall-threshold", "0.5"}), doctest::Contains("expected 1 to"), ConfigError);
  CHECK_THROWS_WITH_AS(parse({"--ranks", "0"}), doctest::Contains("out of range"), ConfigError);
  CHECK_THROWS_WITH_AS(parse({"--bogus"}), doctest::Contains("unknown option"), ConfigError);
  auto c = parse({"--job-id", "x1", "--ranks", "2", "--ledger", "/tmp/l"});
  CHECK_THROWS_WITH_AS(validate(c), doctest::Contains("expected a decimal number"), ConfigError);
  auto d = parse({"--job-id", "1", "--ranks", "2"});
  d.ledger.clear();
  CHECK_THROWS_WITH_AS(validate(d), doctest::Contains("--ledger"), ConfigError);
}

TEST_CASE("replay and checkpoint options") {
  auto c = parse({"--job-id", "1", "--ranks", "2", "--ledger", "/x", "--replay-interval", "0", "--replay-budget",
                  "0.05", "--replay-cores", "0,2-3", "--replay-recipes", "gemm_f64,mem_march", "--ckpt-dir", "/ck",
                  "--ckpt-marker", "DONE", "--replay-sched", "normal"});
  CHECK(c.replay_interval_s == 0);
  CHECK(c.replay_budget == doctest::Approx(0.05));
  CHECK(c.replay_cores == std::vector<int>{0, 2, 3});
  CHECK(c.replay_sched == "normal");
  CHECK_NOTHROW(validate(c));
  auto err = [](std::vector<std::string> a) {
    try {
      auto c2 = parse(a);
      validate(c2);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<std::string> base = {"--job-id", "1", "--ranks", "2", "--ledger", "/x"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  CHECK(err(with({"--replay", "maybe"})).find("expected on or off") != std::string::npos);
  CHECK(err(with({"--replay-budget", "0"})).find("use --replay off") != std::string::npos);
  CHECK(err(with({"--replay-budget", "2"})).find("out of range") != std::string::npos);
  CHECK(err(with({"--replay-cores", "3-1"})).find("not a CPU list") != std::string::npos);
  CHECK(err(with({"--replay-recipes", "gemm_f16"})).find("'gemm_f16' is not a recipe") != std::string::npos);
  CHECK(err(with({"--replay-sched", "fifo"})).find("expected idle or normal") != std::string::npos);
  CHECK(err(with({"--ckpt-marker", "a/b"})).find("without '/'") != std::string::npos);
}

TEST_CASE("--learn-aggregation: the default is personalised; a bad name lists the choices") {
  auto c = parse({"--job-id", "1", "--ranks", "2", "--ledger", "/x"});
  CHECK(c.learn_aggregation == "personalised");
  for (const char* n : {"fedavg", "fedavgm", "fedadam", "matched", "clustered", "personalised"})
    CHECK(parse({"--learn-aggregation", n}).learn_aggregation == n);
  CHECK_THROWS_WITH_AS(parse({"--learn-aggregation", "attention"}),
                       doctest::Contains("--learn-aggregation: 'attention'; expected personalised, clustered, matched"),
                       ConfigError);
}
