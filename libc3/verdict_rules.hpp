// libc3 verdict rules: the consensus contract of docs/architecture.md as pure
// functions. Exact mode (fingerprints, signatures, progress positions) and
// statistical mode (timings). No I/O, no MPI: scoutd, replay and the tests
// all call these.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace scout::c3 {

// The majority arithmetic, written once: `part` of `whole` is more than
// half (a strict majority) or less than half (a strict minority).
constexpr bool strict_majority(std::size_t part, std::size_t whole) noexcept { return 2 * part > whole; }
constexpr bool strict_minority(std::size_t part, std::size_t whole) noexcept { return 2 * part < whole; }

enum class ExactOutcome { kAgree, kAttributed, kInconclusive };

const char* to_string(ExactOutcome o) noexcept;

struct ExactResult {
  ExactOutcome outcome = ExactOutcome::kAgree;
  std::optional<std::uint64_t> majority_value;  // set for agree / attributed
  std::vector<std::size_t> outliers;            // indices disagreeing with it
  std::size_t majority_count = 0;
};

// All equal -> agree; one value held by more than half -> attributed (the
// others are outliers); otherwise inconclusive. An empty input agrees.
// `population` is how many equivalent peers there are when some did not
// report (a communicator's size): the majority is of the population, never
// of those that happened to answer. 0 means values.size().
ExactResult exact_consensus(const std::vector<std::uint64_t>& values, std::size_t population = 0);

struct StatThresholds {
  double absolute = 0.005;  // an outlier exceeds median + absolute ...
  double relative = 1.2;    // ... and relative x median ...
  double scale_k = 3.0;     // ... and median + k x robust scale
};

enum class ScaleKind { kMad, kIqr, kRange, kZero };
const char* to_string(ScaleKind k) noexcept;

struct StatResult {
  double median = 0;
  double scale = 0;
  ScaleKind scale_kind = ScaleKind::kZero;
  std::vector<std::size_t> outliers;  // indices above all thresholds
  std::vector<double> scores;         // value / median per index
};

// Thrown for NaN or infinite input: a timing we cannot trust is an error.
struct BadSample : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

double median(std::vector<double> v);
// Robust scale: 1.4826 x MAD; if that is zero, IQR / 1.349; if that is zero,
// the range; else zero.
std::pair<double, ScaleKind> robust_scale(const std::vector<double>& v);

// Slow outliers (high side). Throws BadSample on NaN/inf.
StatResult statistical_outliers(const std::vector<double>& values,
                                const StatThresholds& t = {});

}  // namespace scout::c3
