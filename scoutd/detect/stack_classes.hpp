// Stack-trace equivalence classes (after STAT's prefix tree): the ranks of
// a hang grouped by where they are. Each rank's stack (innermost first) is
// cut to its interesting part: the outer frames of the C runtime (_start,
// __libc_start_main) are dropped, and the frames inside the MPI or NCCL
// library are cut at the outermost call into it (MPI_Allreduce, PMPI_Wait,
// ncclAllReduce): below it every waiting rank polls at a different place.
// Ranks with the same cut stack form a class; the classes print as
//   "6 ranks in MPI_Allreduce <- exchange <- main; rank 4 in nanosleep <- compute <- main"
// and ranks whose stack could not be taken are listed with the reason.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>


namespace scout::scoutd {

struct RankStack {
  int rank = -1;
  std::vector<std::string> frames;  // innermost first; empty: see error
  std::string error;                // why it was not taken ("" and no frames: none taken)
};

// The cut stack, innermost first.
std::vector<std::string> cut_stack(const std::vector<std::string>& frames);

// {"classes": [{"ranks": [...], "frames": [innermost first]}, ...] largest
// first, "untraced": [{"ranks": [...], "error": "..."}], "text": "..."};
// null when no rank has a stack or an error.
nlohmann::json stack_classes(const std::vector<RankStack>& ranks);

// "ranks 0-3,5" style.
std::string rank_list(const std::vector<int>& ranks);

}  // namespace scout::scoutd
