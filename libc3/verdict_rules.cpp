// libc3 verdict rules (see verdict_rules.hpp). Never guesses: without a
// strict majority the result is inconclusive.
#include "libc3/verdict_rules.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace scout::c3 {

const char* to_string(ExactOutcome o) noexcept {
  switch (o) {
    case ExactOutcome::kAgree: return "agree";
    case ExactOutcome::kAttributed: return "attributed";
    case ExactOutcome::kInconclusive: return "inconclusive";
  }
  return "?";
}

const char* to_string(ScaleKind k) noexcept {
  switch (k) {
    case ScaleKind::kMad: return "mad";
    case ScaleKind::kIqr: return "iqr";
    case ScaleKind::kRange: return "range";
    case ScaleKind::kZero: return "zero";
  }
  return "?";
}

ExactResult exact_consensus(const std::vector<std::uint64_t>& values, std::size_t population) {
  population = std::max(population, values.size());
  ExactResult r;
  if (values.empty()) return r;
  std::map<std::uint64_t, std::size_t> counts;
  for (auto v : values) ++counts[v];
  auto best = std::max_element(counts.begin(), counts.end(),
                               [](auto& a, auto& b) { return a.second < b.second; });
  if (best->second == values.size()) {
    r.outcome = ExactOutcome::kAgree;
    r.majority_value = best->first;
    r.majority_count = best->second;
    return r;
  }
  if (strict_majority(best->second, population)) {
    r.outcome = ExactOutcome::kAttributed;
    r.majority_value = best->first;
    r.majority_count = best->second;
    for (std::size_t i = 0; i < values.size(); ++i)
      if (values[i] != best->first) r.outliers.push_back(i);
    return r;
  }
  r.outcome = ExactOutcome::kInconclusive;
  r.majority_count = best->second;
  return r;
}

namespace {
void check_finite(const std::vector<double>& v) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw BadSample(fmt::format("libc3: statistical consensus: sample {} is {}; "
                                  "expected a finite number", i, v[i]));
}

double quantile_sorted(const std::vector<double>& s, double q) {
  if (s.empty()) return 0;
  double pos = q * static_cast<double>(s.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  auto hi = static_cast<std::size_t>(std::ceil(pos));
  double frac = pos - static_cast<double>(lo);
  return s[lo] + (s[hi] - s[lo]) * frac;
}
}  // namespace

double median(std::vector<double> v) {
  check_finite(v);
  if (v.empty()) throw BadSample("libc3: median of an empty sample; expected at least one value");
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

std::pair<double, ScaleKind> robust_scale(const std::vector<double>& v) {
  check_finite(v);
  if (v.size() < 2) return {0.0, ScaleKind::kZero};
  double med = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - med));
  double mad = median(dev);
  if (mad > 0) return {1.4826 * mad, ScaleKind::kMad};
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  double iqr = quantile_sorted(s, 0.75) - quantile_sorted(s, 0.25);
  if (iqr > 0) return {iqr / 1.349, ScaleKind::kIqr};
  double range = s.back() - s.front();
  if (range > 0) return {range, ScaleKind::kRange};
  return {0.0, ScaleKind::kZero};
}

StatResult statistical_outliers(const std::vector<double>& values, const StatThresholds& t) {
  check_finite(values);
  StatResult r;
  if (values.empty()) return r;
  r.median = median(values);
  std::tie(r.scale, r.scale_kind) = robust_scale(values);
  r.scores.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    double x = values[i];
    r.scores.push_back(r.median > 0 ? x / r.median : (x > 0 ? INFINITY : 1.0));
    bool over_abs = x > r.median + t.absolute;
    bool over_rel = x > r.median * t.relative;
    // Range as a scale would make the largest value never exceed k x scale;
    // with few peers, the absolute and relative thresholds decide alone.
    bool over_scale = r.scale_kind == ScaleKind::kRange || r.scale_kind == ScaleKind::kZero ||
                      x > r.median + t.scale_k * r.scale;
    if (over_abs && over_rel && over_scale) r.outliers.push_back(i);
  }
  return r;
}

}  // namespace scout::c3
