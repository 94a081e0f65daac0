// The federated aggregations by name (no Eigen: the Slurm plugin validates
// its plugstack key with it too).
#pragma once

#include <string_view>

namespace scout::learn {

enum class Aggregation { kFedAvg, kFedAvgM, kFedAdam, kMatched, kClustered, kPersonalised };
inline constexpr const char* kAggregationNames[] = {"fedavg",  "fedavgm",   "fedadam",
                                                    "matched", "clustered", "personalised"};
inline constexpr const char* kAggregationChoices =
    "personalised, clustered, matched, fedadam, fedavgm or fedavg";

inline const char* aggregation_name(Aggregation a) noexcept { return kAggregationNames[static_cast<int>(a)]; }
// False when `s` names none of them.
inline bool parse_aggregation(std::string_view s, Aggregation& out) noexcept {
  for (int i = 0; i < 6; ++i)
    if (s == kAggregationNames[i]) {
      out = static_cast<Aggregation>(i);
      return true;
    }
  return false;
}

}  // namespace scout::learn
