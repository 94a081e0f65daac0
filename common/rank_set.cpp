// Rank sets as ranges (see rank_set.hpp).
#include "common/rank_set.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

namespace scout::common {

namespace {

// Merges two sorted range lists, coalescing overlapping and adjacent ones.
std::vector<RankSet::Range> merged(const std::vector<RankSet::Range>& a, const std::vector<RankSet::Range>& b) {
  std::vector<RankSet::Range> all;
  all.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(all));
  std::vector<RankSet::Range> out;
  for (auto& r : all) {
    if (!out.empty() && static_cast<long long>(r.first) <= static_cast<long long>(out.back().second) + 1)
      out.back().second = std::max(out.back().second, r.second);
    else
      out.push_back(r);
  }
  return out;
}

}  // namespace

void RankSet::add(int rank) {
  if (rank < 0) return;
  ranges_ = merged(ranges_, {{rank, rank}});
  cap();
}

namespace {
constexpr std::size_t kMaxUnlisted = std::size_t{1} << 31;  // more ranks than any job has
}  // namespace

void RankSet::merge(const RankSet& other) {
  ranges_ = merged(ranges_, other.ranges_);
  unlisted_ = std::min(unlisted_ + other.unlisted_, kMaxUnlisted);  // each at most 2^31: no overflow
  cap();
}

void RankSet::cap() {
  if (ranges_.size() <= kMaxRanges) return;
  for (std::size_t i = kMaxRanges; i < ranges_.size(); ++i)
    unlisted_ += static_cast<std::size_t>(ranges_[i].second - ranges_[i].first) + 1;
  unlisted_ = std::min(unlisted_, kMaxUnlisted);
  ranges_.resize(kMaxRanges);
}

bool RankSet::contains(int rank) const noexcept {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), rank, [](int r, const Range& x) { return r < x.first; });
  return it != ranges_.begin() && rank <= std::prev(it)->second;
}

std::size_t RankSet::count() const noexcept {
  std::size_t n = unlisted_;
  for (auto& r : ranges_) n += static_cast<std::size_t>(r.second - r.first) + 1;
  return n;
}

std::vector<int> RankSet::first(std::size_t n) const {
  std::vector<int> out;
  for (auto& r : ranges_)
    for (long long k = r.first; k <= r.second && out.size() < n; ++k) out.push_back(static_cast<int>(k));
  return out;
}

std::string RankSet::text(std::size_t max_ranges) const {
  std::string out;
  std::size_t shown = 0, rest = unlisted_;
  for (auto& r : ranges_) {
    if (shown == max_ranges) {
      rest += static_cast<std::size_t>(r.second - r.first) + 1;
      continue;
    }
    if (!out.empty()) out += ',';
    out += r.first == r.second ? std::to_string(r.first) : fmt::format("{}-{}", r.first, r.second);
    ++shown;
  }
  if (rest) out += fmt::format("{}... ({} more)", out.empty() ? "" : ",", rest);
  return out;
}

nlohmann::json RankSet::to_wire() const {
  nlohmann::json j = nlohmann::json::array();
  for (auto& r : ranges_) j.push_back({r.first, r.second});
  return j;
}

std::optional<RankSet> RankSet::from_wire(const nlohmann::json& ranges, std::size_t unlisted, std::string* why) {
  auto refuse = [&](std::string what) -> std::optional<RankSet> {
    if (why) *why = std::move(what);
    return std::nullopt;
  };
  if (!ranges.is_array() || ranges.size() > kMaxRanges)
    return refuse(fmt::format("an array of at most {} rank ranges", kMaxRanges));
  RankSet s;
  long long last = -2;
  for (auto& r : ranges) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer())
      return refuse("rank ranges as [first, last] integer pairs");
    const long long lo = r[0].get<long long>(), hi = r[1].get<long long>();
    if (lo < 0 || hi < lo || hi > 0x7fffffffLL || lo <= last + 1)
      return refuse("sorted, disjoint rank ranges of non-negative ranks");
    s.ranges_.push_back({static_cast<int>(lo), static_cast<int>(hi)});
    last = hi;
  }
  if (unlisted > kMaxUnlisted) return refuse("an unlisted count of at most 2^31 ranks");
  s.unlisted_ = unlisted;
  return s;
}

}  // namespace scout::common
