// scoutd options: numbers are strict, errors name the option and what was
// expected.
#include <doctest/doctest.h>

#include <vector>

#include "scoutd/config.hpp"

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
