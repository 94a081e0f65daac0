// Stragglers against their own past (point-to-point programs of any
// decomposition). The late-sender rule (late_sender.hpp) needs senders the
// communication pattern makes equivalent; irregular decompositions (meep's,
// most real codes' at small rank counts) have none. Here each rank is
// compared with itself, over windows of wall time (at least window_s), on
// two signals:
//
//   cpu(r)    = its share of a CPU in the window (/proc/<pid>/schedstat,
//               read by its node's scoutd). MPI and NCCL ranks busy-poll
//               while they wait, so a rank's share is set by the node, not
//               by its role; it drops when the rank is stopped, throttled by
//               a cgroup quota, or shares its core with another process;
//   caused(r) = the wait its partners had because of it in the window, per
//               partner, as a fraction of the window: waiting for its
//               messages (Scalasca's late sender) and blocked in sends to it
//               (a late receiver: LAMMPS's MPI_Send to a rank that has not
//               posted its receive), averaged over the ranks it exchanges with.
//
// A rank is flagged in a window when, against its baseline (the median of
// its earlier windows, min_baseline to history of them; from min_early on,
// with the floors alone, so that a rank slowed a few seconds into the job
// keeps its healthy windows as its normal),
//
//   its CPU share dropped by more than max(cpu_floor x baseline, k x spread),
//   the other ranks' median drop is under half of its own (a phase of the
//   whole job, or a busier node, is nobody's), and
//   it is on the critical path: its partners wait for it more (caused rose
//   by more than max(floor, k x spread)), or, with three ranks or more
//   compared, its exchanges slowed down with it (messages per second fell
//   by more than max(rate_floor, k x spread) of its baseline: the job
//   slowed while it alone lost CPU). A rank that only sleeps more while the
//   others do not, or that merely propagates the delay, is not named,
//
// where the spread is the robust scale of its baseline windows: the
// threshold comes from the job's own jitter, with a floor. A rank's role
// (more neighbours, a root, a pipeline stage, more work) sets its levels
// for the whole run and is in its baseline. Windows where its share dropped
// stay out of the baseline (until min_baseline of them in a row, none
// flagged, show a new normal nobody waits for), and a rank whose exchanges
// sped up is not flagged (a gain beside a throttled neighbour given back).
// Never the neighbour: a flagged rank that waits for another rank more
// than it did (each pair's wait against its own baseline), and more than
// that one waits more for it, is that one's victim and is not named, when
// the other is flagged too or could not be compared. A rank flagged in K
// consecutive windows is a
// straggler (source p2p_change_point, key straggler:p2p:<rank>, shared with
// the late-sender rule so one slow rank is one incident); it is resolved
// after K unflagged windows. The verdict says why its share dropped, from
// its run-queue delay (schedstat's second field) against its baseline: it
// was runnable and waited for a CPU (another process on its core, or a
// cgroup CPU quota throttling it), or it was not runnable (stopped, or
// blocked outside MPI). A rank slow from the start has no change
// point: the late-sender rule names it against its peers where they exist.
//
// Collective-only ranks (no point-to-point message so far) are compared
// the same way, with the collectives as their exchanges: caused(r) is the
// median share of the window the other collective-only ranks spent inside
// collectives (a rank slow to arrive makes every other member wait), the
// rate is its collectives per second, and a rank that waits more inside
// collectives itself (its own share rose by more than max(floor, k x
// spread), and by as much as the others' less the floor) is a victim,
// never named: the slow one arrives last and waits least (stopped inside a
// collective it holds the others there, so its share may rise too). Its
// CPU share must drop by 5% of a CPU at least (a rank whose compute sleeps
// runs a few percent, within its noise), and a rank that was not runnable
// while it read or wrote 1 MiB/s or more is in an I/O phase (rank 0 writing
// a checkpoint), not named here. Source coll_change_point, the
// same key (one slow rank is one incident), and none while the compute
// rule has the rank's incident open.
//
// Slow from the start. A rank slower from its first windows has no change
// point: its slow windows are its normal. Where it has no equivalent peers
// either, it is compared with the other ranks by what is its own and not
// its role's: it waits on a run queue for a CPU (by start_runq of the
// window more than the others' median, with under start_cpu of their
// median share), or its CPU's clock is under start_clock of theirs (a
// slower or throttled CPU); and it waits for its partners less than they
// do (its own wait under their median: they wait, it is waited for). In
// start_windows consecutive windows (default twice the confirmations) that
// the change point did not flag: `straggler`, status inconclusive (no
// earlier normal of its own shows the change), source slow_from_start, the
// same key. On a host where every rank shares the cores they all wait
// alike: nobody stands out.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "scoutd/detect/straggler_detector.hpp"

namespace scout::scoutd {

struct ChangePointOptions {
  int confirmations = 3;   // consecutive flagged windows before a verdict (and unflagged to resolve)
  int min_baseline = 4;    // baseline windows before a rank is compared with its own spread
  int min_early = 2;       // ... and before it is compared with the floors only
  int history = 16;        // baseline windows kept (the latest)
  double window_s = 2.0;   // a window lasts at least this long
  double floor = 0.05;     // the smallest rise of caused wait, as a fraction of wall time
  double cpu_floor = 0.2;  // the smallest drop of CPU share, as a fraction of its baseline
  double rate_floor = 0.15;  // the smallest slowdown of its exchanges, as a fraction of its baseline
  double spread_k = 4.0;   // ... and k x the robust spread of the rank's baseline
  std::uint64_t min_messages = 10;  // a rank's receivers got this many from it in a window
  double start_runq = 0.2;   // slow from the start: on a run queue this much of the window more than the others
  double start_cpu = 0.75;   // ... with under this fraction of their median CPU share
  double start_clock = 0.85; // ... or its CPU's clock under this fraction of theirs
  int start_windows = 0;     // ... in this many windows in a row (0: twice the confirmations)
};

// One rank's window, for the comparison with the others from the start.
struct StartSample {
  int rank = -1;
  double cpu = 0, runq = -1, own = 0;  // shares of the window (runq -1: unknown)
  long khz = -1;                       // its CPU's clock (-1 unknown)
};
struct StartFinding {
  int rank = -1;
  bool by_clock = false;  // its clock, not the run queue
  StartSample self;
  double others_cpu = 0, others_runq = -1, others_own = 0;  // the other ranks' medians
  long others_khz = -1;
};
// The ranks slower than the others this window by their own evidence (see
// "Slow from the start" above); at least two samples, all of one kind
// (point-to-point or collective-only: their waits are not alike). `keep`:
// only the run-queue or clock condition at half its distance, for ranks
// whose incident is open (it resolves once they are well clear of it, not
// when they hover at the threshold).
std::vector<StartFinding> slow_from_start(const std::vector<StartSample>& samples, const ChangePointOptions& o,
                                          bool keep = false);
// The median of `sorted` (ascending) without one element equal to x.
double median_without(const std::vector<double>& sorted, double x);

class ChangePointTracker {
 public:
  explicit ChangePointTracker(ChangePointOptions o = {}) : opt_(o) {}
  struct Result {
    std::vector<VerdictDraft> verdicts;
    std::vector<std::string> resolved;
    bool closed = false;  // a window closed
  };
  Result update(const std::vector<RankEvidence>& ranks, double now_s, const std::set<std::string>& open);
  // Whether the rank was flagged in the last closed window (against its
  // own past, or from the start).
  bool flagged(int rank) const { return flagged_.count(rank) > 0 || start_flagged_.count(rank) > 0; }
  ChangePointOptions& options() { return opt_; }

 private:
  struct Counters {
    std::uint64_t recvd = 0, sent = 0;
    double wait_s = 0, send_wait_s = 0;
  };
  struct Sample {
    double caused = 0, own = 0, cpu = 0, rate = 0;
    double runq = -1;  // its share of the window runnable on a run queue, not running (-1 unknown)
    double coll = -1;  // a collective-only rank's own share of the window inside collectives (-1: p2p)
  };
  struct Sched {
    int pid = 0;
    long long cpu_ns = 0, runq_ns = -1;
    std::int64_t at_ns = 0;
    long long coll_in_ns = -1;
    std::uint64_t seq = 0;
    long long io = -1;  // rchar + wchar
  };
  std::map<int, Sched> sched_;
  ChangePointOptions opt_;
  double window_start_s_ = -1;
  std::map<std::pair<int, int>, Counters> prev_;  // (receiver, sender) at the window's start
  std::map<int, std::deque<Sample>> baseline_;
  std::map<int, std::deque<Sample>> lower_;  // unflagged windows with a lower share, in a row
  // A pair's waits in its baseline windows, the latest `history` of them:
  // a ring of floats (a deque per pair cost about 600 bytes; at 100,000
  // ranks of 6 partners each that was 400 MB at the deciding observer).
  struct EdgeHistory {
    std::vector<float> v;
    std::uint16_t next = 0;  // where the next wait goes once v is full
    void push(double w, int cap) {
      if (static_cast<int>(v.size()) < cap) {
        v.push_back(static_cast<float>(w));
        return;
      }
      if (v.empty()) return;
      v[next % v.size()] = static_cast<float>(w);
      next = static_cast<std::uint16_t>((next + 1) % v.size());
    }
  };
  std::map<std::pair<int, int>, EdgeHistory> edge_base_;  // (waiter, sender)
  std::map<int, int> confirm_, healthy_, start_confirm_;
  std::set<int> flagged_, start_flagged_;
  VerdictDraft start_verdict(const StartFinding& f, const RankEvidence& e, bool coll, double window_s) const;
};

}  // namespace scout::scoutd
