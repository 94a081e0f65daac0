// Which rank is in which call, and where (the question every user of a
// hung job asks: "which rank, and where"). The ranks of a divergence are
// grouped by the collective they wait in at one position (its fingerprint:
// kind, communicator and arguments); each group is stated with its ranks,
// its call and, from the stack-trace classes, the program's call site (the
// frame that called the library: "train.c:62" where the program has DWARF
// line tables, else the calling function). What kind of mismatch the groups
// make is said in words, with or without a strict majority:
//
//   "rank 0 in MPI_Allreduce (train.c:62), rank 1 in MPI_Allgatherv
//    (train.c:67) at collective 3: the ranks call collectives in a
//    different order"
//
// Bounded: at most kMaxGroups groups (the most crowded), kListMax ranks
// listed per group, kMaxSummary characters of sentence.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scoutd/detect/stack_classes.hpp"
#include "scoutd/observe/rank_evidence.hpp"

namespace scout::scoutd {

inline constexpr std::size_t kMaxGroups = 16;
inline constexpr std::size_t kMaxSummary = 1024;

// The groups of `ranks` (all at one collective position) by fingerprint,
// largest first: [{"kind", "communicator", "ranks", "count", "rank_ranges"}];
// `mismatch` gets what kind of mismatch they make ("the ranks call
// collectives in a different order", "... on different communicators",
// "... with different arguments (root, operation, datatype or count)").
// `dropped` (if given) gets how many groups past kMaxGroups were left out.
nlohmann::json collective_groups(const std::vector<const RankEvidence*>& ranks, std::string* mismatch,
                                 std::size_t* dropped = nullptr);

// Every rank of a hang, stall or deadlock grouped by what it is in, the
// most crowded first: a collective ({"state": "collective", "kind",
// "communicator", "fingerprint", "position"}), a point-to-point or
// completion call ({"state": "p2p", "call", "peers" (world ranks, -1 any
// source), "communicator"}), or outside MPI ({"state": "outside",
// "process": "stopped", "in uninterruptible sleep", "a zombie", "exited",
// "finalized" or "running"}); each with "ranks", "count", "rank_ranges".
nlohmann::json state_groups(const std::vector<RankEvidence>& ranks, std::size_t* dropped = nullptr);

// Completes evidence that has "groups" (and "mismatch", "position",
// "groups_dropped") with each group's call and call site from the stack
// tree (null: none taken), or why its stack is missing, and sets "summary",
// the sentence above. A communicator whose identity is `world` is said as
// MPI_COMM_WORLD (0: none is).
void describe_groups(nlohmann::json& evidence, const StackTree* stacks, std::uint64_t world = 0);

}  // namespace scout::scoutd
