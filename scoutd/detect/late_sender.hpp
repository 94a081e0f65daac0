// Point-to-point stragglers: late-sender analysis (the wait-state model of
// Scalasca). Each receiver's probe times how long it waited for a message
// from each sender (a blocking receive, or a wait on requests whose messages
// had not arrived when it began). At the deciding observer, over a window
// of gathers, a sender's lateness is the mean wait per timed message its
// receivers had for it (the probe times every blocking receive, and one
// MPI_Waitall on several requests in 4). A sender is compared only with senders the communication
// pattern makes equivalent: the same multiset of signed rank offsets to its
// receivers (normalised modulo the job size, so periodic neighbours match)
// and the same message size class. Within a class of at least three, a
// sender whose lateness exceeds the median of the others of its class by an
// absolute guard derived from the step time (the interval between its
// messages, or below it the class's own spread of lateness over its healthy
// windows) and by a relative threshold, and whose lateness is not explained
// by its own waiting (a wait state propagated from the real straggler), in K
// consecutive windows, is a straggler (source p2p_late_sender); it is
// resolved after K healthy windows. The same analysis, turned around, finds
// late receivers (options().receivers): the ranks their senders wait for in
// blocking sends (source p2p_late_receiver). On a node where the ranks
// share cores, a late rank the scheduler favoured is excused (see
// LateSenderOptions::shared_runq).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "scoutd/detect/straggler_detector.hpp"

namespace scout::scoutd {

struct LateSenderOptions {
  int confirmations = 3;        // consecutive windows before a verdict (and to resolve)
  std::uint64_t min_messages = 20;  // per sender in a window
  double relative = 1.5;        // lateness above relative x the class median ...
  double step_fraction = 0.1;   // ... and above this fraction of the step time ...
  double floor_s = 20e-6;       // ... and never below this (timer and scheduler noise)
  double jitter_k = 4.0;        // the guard: jitter_k x the class's spread of lateness, once
  int min_history = 4;          // ... this many healthy windows of a sender are known
  int history = 16;             // healthy windows kept per sender
  // Late receivers instead: the blamed rank is the one its senders wait for
  // in blocking sends (a send above the eager limit waits until the receive
  // is posted); the waits are the senders' send waits per message sent.
  bool receivers = false;
  // A node where the ranks share cores (the median share of the window its
  // other ranks spent runnable on a run queue, not running, at least
  // shared_runq): lateness there is also the schedule's. A late rank that
  // ran more than favoured_cpu x its node's other ranks' median share of a
  // CPU was favoured by the scheduler, not slowed: it is late from the work
  // it was given (GROMACS's load balancing gives more atoms to the ranks the
  // scheduler favours), and excused like a rank that waits itself. A late
  // rank with the others' share or less is judged as anywhere else.
  double shared_runq = 0.1;
  double favoured_cpu = 1.1;
};

class LateSenderTracker {
 public:
  explicit LateSenderTracker(LateSenderOptions o = {}) : opt_(o) {}
  struct Result {
    std::vector<VerdictDraft> verdicts;
    std::vector<std::string> resolved;
    bool compared = false;  // a window closed and a class had three senders
  };
  // `now_s`: the deciding observer's clock; `open`: straggler keys recorded.
  Result update(const std::vector<RankEvidence>& ranks, double now_s, const std::set<std::string>& open);
  static std::string key_for(int rank);
  // Whether the sender was an outlier in the last closed window.
  bool flagged(int rank) const { return confirm_.count(rank) > 0; }
  LateSenderOptions& options() { return opt_; }

 private:
  LateSenderOptions opt_;
  struct Prev {
    std::uint64_t recvd = 0, waits = 0, sent = 0;
    double wait_s = 0, send_wait_s = 0;
  };
  std::map<std::pair<int, int>, Prev> prev_;  // (receiver, sender)
  double window_start_s_ = -1;
  std::map<int, int> confirm_, healthy_;
  std::map<int, int> unseen_;  // flagged ranks: closed windows in a row they were not compared in
  std::map<int, std::deque<double>> late_hist_;  // lateness in its healthy windows
  // Each rank's /proc/<pid>/schedstat at the window's start: its CPU share
  // and run-queue share over the window are its own evidence.
  struct SchedMark {
    int pid = 0;
    std::string node;
    long long cpu_ns = -1, runq_ns = -1;
    std::int64_t at_ns = 0;
  };
  std::map<int, SchedMark> sched_;
};

}  // namespace scout::scoutd
