// The consensus contract: exact and statistical verdict rules.
#include <doctest/doctest.h>

#include <cmath>

#include "libc3/verdict_rules.hpp"

using namespace scout::c3;

TEST_CASE("exact: all equal agree") {
  auto r = exact_consensus({5, 5, 5, 5});
  CHECK(r.outcome == ExactOutcome::kAgree);
  CHECK(*r.majority_value == 5);
  CHECK(r.outliers.empty());
}

TEST_CASE("exact: a strict majority attributes the others") {
  auto r = exact_consensus({7, 7, 3, 7, 7});
  CHECK(r.outcome == ExactOutcome::kAttributed);
  CHECK(*r.majority_value == 7);
  REQUIRE(r.outliers.size() == 1);
  CHECK(r.outliers[0] == 2);
}

TEST_CASE("exact: half is not a strict majority") {
  CHECK(exact_consensus({1, 1, 2, 2}).outcome == ExactOutcome::kInconclusive);
  CHECK(exact_consensus({1, 2}).outcome == ExactOutcome::kInconclusive);  // two peers: mismatch, no culprit
  CHECK(exact_consensus({1, 2, 3}).outcome == ExactOutcome::kInconclusive);
  auto r = exact_consensus({1, 1, 2});
  CHECK(r.outcome == ExactOutcome::kAttributed);
  CHECK(r.outliers == std::vector<std::size_t>{2});
}

TEST_CASE("robust scale falls back MAD -> IQR -> range") {
  CHECK(robust_scale({1, 2, 3, 4, 100}).second == ScaleKind::kMad);
  // More than half identical: MAD is 0, the IQR is not.
  CHECK(robust_scale({5, 5, 5, 5, 5, 9, 9, 9}).second == ScaleKind::kIqr);
  CHECK(robust_scale({5, 5, 5, 5, 5, 5, 5, 9}).second == ScaleKind::kRange);
  CHECK(robust_scale({5, 5, 5}).second == ScaleKind::kZero);
}

TEST_CASE("statistical: outlier must beat absolute and relative thresholds") {
  std::vector<double> t = {0.100, 0.101, 0.099, 0.100, 0.150, 0.102, 0.098, 0.100};
  auto r = statistical_outliers(t, {.absolute = 0.005, .relative = 1.2});
  REQUIRE(r.outliers.size() == 1);
  CHECK(r.outliers[0] == 4);
  CHECK(r.scores[4] == doctest::Approx(1.5).epsilon(0.01));
  // Same shape, tiny values: relative passes, absolute does not.
  std::vector<double> tiny = {0.0010, 0.0010, 0.0010, 0.0015, 0.0010};
  CHECK(statistical_outliers(tiny, {.absolute = 0.005, .relative = 1.2}).outliers.empty());
  // Large values: absolute passes, relative does not.
  std::vector<double> big = {10.0, 10.0, 10.0, 10.1, 10.0};
  CHECK(statistical_outliers(big, {.absolute = 0.005, .relative = 1.2}).outliers.empty());
}

TEST_CASE("statistical: NaN and infinity are rejected with an error") {
  CHECK_THROWS_AS(statistical_outliers({1.0, NAN, 2.0}), BadSample);
  CHECK_THROWS_AS(statistical_outliers({1.0, INFINITY}), BadSample);
  CHECK_THROWS_WITH_AS(median({}), doctest::Contains("expected at least one value"), BadSample);
  try {
    statistical_outliers({1.0, NAN});
  } catch (const BadSample& e) {
    CHECK(std::string(e.what()).find("expected a finite number") != std::string::npos);
  }
}
