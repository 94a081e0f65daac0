// A set of ranks as sorted ranges ("0-99998,99999"), bounded: at most
// kMaxRanges ranges are listed, the ranks of the ranges past them are only
// counted (`unlisted`). Sets of disjoint subtrees (each rank has one
// observer) merge with an exact count however scattered the ranks are;
// what is listed is the lowest ranks. The wire form is [[lo, hi], ...] and
// the unlisted count; what a peer sent is checked before it is used.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::common {

class RankSet {
 public:
  static constexpr std::size_t kMaxRanges = 256;
  using Range = std::pair<int, int>;  // inclusive

  void add(int rank);
  void merge(const RankSet& other);
  bool empty() const noexcept { return ranges_.empty() && unlisted_ == 0; }
  std::size_t count() const noexcept;
  std::size_t unlisted() const noexcept { return unlisted_; }
  const std::vector<Range>& ranges() const noexcept { return ranges_; }
  // Whether `rank` is listed (ranks past kMaxRanges ranges are counted, not listed).
  bool contains(int rank) const noexcept;
  // The first `n` listed ranks, in order.
  std::vector<int> first(std::size_t n) const;
  // "0-3,5"; past `max_ranges` ranges (or with unlisted ranks) it ends with
  // ",... (N more)".
  std::string text(std::size_t max_ranges = kMaxRanges) const;

  nlohmann::json to_wire() const;  // [[lo, hi], ...]
  // From a peer: sorted, disjoint, non-negative ranges, at most kMaxRanges;
  // `unlisted` is the count the peer could not list. nullopt (and `why`).
  static std::optional<RankSet> from_wire(const nlohmann::json& ranges, std::size_t unlisted, std::string* why);

 private:
  void cap();
  std::vector<Range> ranges_;  // sorted, disjoint, not adjacent
  std::size_t unlisted_ = 0;
};

}  // namespace scout::common
