// scoutd's evidence gather as it is today, for the simulator: each member
// contributes the JSON evidence of its ranks (scoutd's own RankEvidence
// encoding) and their stacks as a prefix tree (as the progress participant
// moves them out of the evidence), the tree merges with scoutd's
// wire::combine_gathers, and the root parses everything and runs scoutd's
// progress detector. One rank is stopped (behind the collective position
// the others reached, state T), and every rank's stack was taken (a
// whole-job hang: they all stalled); the decision names what the detector
// named. This measures what a gather costs the root at N members: bytes
// in, CPU to merge and to decide, and the stacks' share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/round_sim.hpp"

namespace scout::sim {

struct GatherModelOptions {
  int ranks_per_member = 8;
  int stopped_rank = 5;
  bool stacks = true;  // every rank's stack taken (Open MPI's frames, 12 deep)
};

// What the root saw, once per decided round.
struct GatherSeen {
  std::vector<int> named;          // the ranks the detector named
  std::size_t stack_bytes = 0;     // the merged stacks section into the root
  std::size_t stack_classes = 0;   // classes it names
  std::size_t stack_ranks = 0;     // ranks counted in them
  std::string stack_text;
};

// The model. `seen` receives the root's view; `stacks_per_rank_bytes`
// (optional) sums the bytes the ranks' stacks would have weighed inside
// each rank's evidence (the gather before the tree: the baseline).
PayloadModel gather_model(GatherModelOptions opt, std::vector<GatherSeen>* seen,
                          std::uint64_t* stacks_per_rank_bytes = nullptr);

}  // namespace scout::sim
