// scoutd's evidence gather as it is today, for the simulator: each member
// contributes the JSON evidence of its ranks (scoutd's own RankEvidence
// encoding), the tree merges with scoutd's wire::combine_gathers, and the
// root parses everything and runs scoutd's progress detector. One rank is
// stopped (behind the collective position the others reached, state T);
// the decision names what the detector named. This measures what a gather
// costs the root at N members: bytes in, CPU to merge and to decide.
#pragma once

#include <string>
#include <vector>

#include "sim/round_sim.hpp"

namespace scout::sim {

struct GatherModelOptions {
  int ranks_per_member = 8;
  int stopped_rank = 5;
};

// The model; `named` receives the ranks the root's detector named, once
// per decided round.
PayloadModel gather_model(GatherModelOptions opt, std::vector<std::vector<int>>* named);

}  // namespace scout::sim
