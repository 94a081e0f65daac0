// Stack-trace equivalence classes (after STAT's prefix tree): the ranks of
// a hang grouped by where they are. Each rank's stack (innermost first) is
// cut to its interesting part: the outer frames of the C runtime (_start,
// __libc_start_main) are dropped, and the frames inside the MPI or NCCL
// library are cut at the outermost call into it (MPI_Allreduce, PMPI_Wait,
// ncclAllReduce): below it every waiting rank polls at a different place.
// Ranks with the same cut stack form a class; the classes print as
//   "6 ranks in MPI_Allreduce <- exchange <- main; rank 4 in nanosleep <- compute <- main"
// and ranks whose stack could not be taken are listed with the reason.
//
// At scale the classes are built in the gather's tree (STAT's merge up its
// MRNet tree): each observer puts its ranks' cut stacks in a StackTree, a
// prefix tree outermost frame first whose nodes hold the ranks that end
// there as ranges; every interior observer merges its children's trees, so
// the deciding observer receives one tree whatever the job's size. A tree
// is bounded in bytes: past the bound its deepest level is folded into the
// level above (the ranks keep their outer frames and are marked "deeper
// frames dropped"), so every rank stays counted in some class.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/rank_set.hpp"

namespace scout::scoutd {

struct RankStack {
  int rank = -1;
  std::vector<std::string> frames;  // innermost first; empty: see error
  std::string error;                // why it was not taken ("" and no frames: none taken)
};

// A frame's function, without the call site scout-stack appends
// ("exchange (train.c:62)" -> "exchange").
std::string frame_function(const std::string& frame);
// Whether the frame is an entry into MPI or NCCL (MPI_*, PMPI_*, nccl*).
bool library_frame(const std::string& frame);

// The cut stack, innermost first.
std::vector<std::string> cut_stack(const std::vector<std::string>& frames);

// {"classes": [{"ranks": [...], "frames": [innermost first]}, ...] largest
// first, "untraced": [{"ranks": [...], "error": "..."}], "text": "..."};
// null when no rank has a stack or an error.
nlohmann::json stack_classes(const std::vector<RankStack>& ranks);

// "ranks 0-3,5" style.
std::string rank_list(const std::vector<int>& ranks);

class StackTree {
 public:
  // What a merged tree may weigh (its wire form, about): 512 KiB.
  static constexpr std::size_t kMaxBytes = std::size_t{512} << 10;
  static constexpr std::size_t kMaxErrors = 32;   // distinct reasons; the rest are one
  static constexpr std::size_t kListRanks = 64;   // ranks listed per class in a verdict
  static constexpr std::size_t kMaxClasses = 256; // classes listed in a verdict (the most crowded)
  static constexpr std::size_t kMaxText = 4096;   // characters of the one-line summary
  static constexpr std::size_t kMaxReasonChars = 256;

  // One rank: its stack (innermost first, cut here) or why it was not taken.
  // Neither: nothing is added.
  void add(int rank, const std::vector<std::string>& frames, const std::string& error);
  // Another observer's tree (disjoint ranks), then bounded to `max_bytes`.
  void merge(const StackTree& other, std::size_t max_bytes = kMaxBytes);
  // Folds the deepest level while the tree weighs more than `max_bytes`.
  void bound(std::size_t max_bytes = kMaxBytes);
  bool empty() const noexcept;
  std::size_t bytes() const noexcept;  // the estimate the bound uses
  std::size_t classes_count() const noexcept;

  // The wire form: {"n": [[parent, frame, ranges, unlisted, folded], ...],
  // "u": [[error, ranges, unlisted], ...]}, parents before children.
  nlohmann::json to_wire() const;
  // A peer's tree, checked (indices, sizes, depth, frames, rank ranges).
  static std::optional<StackTree> from_wire(const nlohmann::json& j, std::string* why);

  // The verdict's form (stack_classes' shape): classes largest first, each
  // {"ranks": the first kListRanks, "count", "rank_ranges", "frames"
  // innermost first[, "frames_dropped": true]}, at most kMaxClasses of them
  // (then "classes_dropped" and "ranks_in_dropped_classes"), "untraced",
  // "text" (at most kMaxText characters); null when the tree is empty.
  nlohmann::json classes() const;

  // Where one rank is: its cut stack (innermost first; `folded` when deeper
  // frames were dropped), or why it was not traced; nullopt when the tree
  // holds neither (a rank listed past a set's ranges is not found either).
  struct Where {
    std::vector<std::string> frames;
    std::string error;
    bool folded = false;
  };
  std::optional<Where> find(int rank) const;

 private:
  struct Node {
    int parent = -1;
    std::string frame;
    int depth = 0;
    common::RankSet ends;  // ranks whose cut stack ends here
    bool folded = false;   // deeper frames were dropped into this node
    std::map<std::string, int> kids;
  };
  int child(int parent, const std::string& frame);
  void fold_deepest();
  std::vector<Node> nodes_{Node{}};  // [0]: the root, no frame
  std::map<std::string, common::RankSet> untraced_;
};

}  // namespace scout::scoutd
