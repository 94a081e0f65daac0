// Invariants checked on every event of a simulated run (after the checkers
// TigerBeetle and FoundationDB run on every simulated run): the engine
// simulator (engine_sim.hpp) feeds it every verdict committed, every
// resolution and every round a member completes, with the simulation's
// ground truth (who is crashed, which side of a partition each member is
// on, when the workload's fault began). Each broken invariant is a line in
// violations(); every simulator test requires none.
//
//   once       an incident key has at most one open verdict: a verdict is
//              committed for a key again only after the last one of that
//              key was resolved (replicas of one verdict are one verdict),
//              unless no member the committer could reach held the open
//              one (a deciding observer commits before it tells anyone: one
//              frozen or cut off right after its commit took the verdict
//              with it until it returns);
//   majority   a member commits its own decider's verdict only while its
//              side of the network (members not crashed, on its side of a
//              partition) is a strict majority, or became a minority only
//              during that round (its evidence was a majority's);
//   books      after a round that completed with a decision, a member's
//              incident book equals the book of the root that decided it
//              (or its book before that decision); one that does not is
//              in step again within kPeriodsBehind periods (its trigger
//              says it is behind, the root sends it the whole book);
//   healthy    no verdict about ranks (any kind but observer_lost) before
//              the workload's first fault.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace scout::sim {

class RunChecker {
 public:
  struct Book {
    std::size_t verdicts = 0, resolved = 0;
    std::uint64_t hash = 0;  // which ones (IncidentBook::Digest)
    bool operator==(const Book&) const = default;
  };
  // `first_fault_s`: when the workload's first fault begins (< 0: none).
  RunChecker(int members, double first_fault_s) : members_(members), first_fault_s_(first_fault_s) {}
  // Whether member b answers member a now: not crashed, not frozen, on its
  // side, and in a's view of the members (the simulator's ground truth and
  // a's view). Unset: always.
  std::function<bool(int a, int b)> reachable;

  // A verdict committed at `member` (its own decider's: `own`).
  // `side_alive`: members alive on its side now; `side_changed_at`: when
  // the sides or the crashed last changed; `round_began`: when its current
  // round began.
  void commit(double t, int member, bool own, const std::string& vkey, const std::string& key,
              const std::string& kind, std::size_t side_alive, double side_changed_at, double round_began);
  void resolution(const std::string& vkey);
  // A round `member` completed with a decision (not in a minority, not
  // expelled); `root`: it decided it; `gather`: a gather round (its down
  // message carries no book digest, so only periods count as rounds behind).
  // `book` after the decision applied.
  void round(double t, int member, bool root, bool gather, const Book& book);

  const std::vector<std::string>& violations() const noexcept { return violations_; }
  std::size_t checks() const noexcept { return checks_; }
  // Periods a member may end out of step with the root: one to see its
  // digest differ, one to ask for the book and receive it, one more for a
  // message lost on the way.
  static constexpr int kPeriodsBehind = 3;

 private:
  void fail(std::string what);
  int members_;
  double first_fault_s_;
  std::map<std::string, std::string> open_by_key_;  // incident key -> open verdict's vkey
  std::map<std::string, std::string> key_of_;       // vkey -> incident key
  std::set<std::string> seen_;                      // vkeys committed anywhere
  std::map<std::string, std::set<int>> holders_;    // vkey -> members that committed it
  Book root_book_{}, root_book_before_{};
  bool have_root_ = false;
  std::map<int, int> behind_;                       // consecutive decided rounds out of step
  std::vector<std::string> violations_;
  std::size_t checks_ = 0;
};

}  // namespace scout::sim
