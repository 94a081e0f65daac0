// What one observer saw of one rank at a gather: its record's live part,
// its process state from /proc, step timing, communicators and output
// signatures. Produced by observe/ (RankWatcher), carried to the deciding
// observer by the gather (JSON, wire/peer_messages.hpp), read by detect/.
// Plain data; from_json must reject what it cannot trust (a peer's bytes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::scoutd {

inline constexpr std::size_t kMaxStackFrames = 32;
inline constexpr std::size_t kMaxFrameChars = 160;
inline constexpr std::size_t kMaxRecent = 4;

struct RankEvidence {
  int rank = -1;
  std::string node;
  int pid = 0;
  bool attached = false;     // its record has been seen
  std::string record_invalid;  // why its record was dropped (then attached is false)
  bool alive = true;
  bool finalized = false;
  std::uint64_t seq = 0;
  std::uint64_t fingerprint = 0;
  std::uint64_t comm_id = 0;
  std::uint32_t kind = 0;
  bool in_collective = false;
  // The collective's arguments, as its probe recorded them (the ones every
  // member passes alike: libc3/rank_record.hpp names the codes); carried
  // only while the rank is inside it. count -1: none recorded (v-variants).
  std::int64_t coll_count = -1;
  std::uint64_t coll_datatype = 0, coll_op = 0;
  std::int64_t coll_root = -1;
  // While it is stalled: its last kMaxRecent collectives before the current
  // position (position, fingerprint, communicator), so that a rank that
  // went on past a position still says what it called there.
  struct Recent {
    std::uint64_t seq = 0, fingerprint = 0, comm = 0;
    bool operator==(const Recent&) const = default;
  };
  std::vector<Recent> recent;
  double stalled_s = 0;      // since its record last showed progress
  char state = '?';          // /proc state letter; 'X' gone
  std::string wchan;
  std::int64_t death_ns = 0; // CLOCK_MONOTONIC when its process went away
  double dead_s = 0;         // how long it had been gone when the evidence was taken
  // It went away after the launcher said that it is stopping the job (the
  // user's Ctrl-C through scout-run): not a crash, whoever went first.
  bool died_on_stop = false;
  long syscall = -1;         // blocking system call, from /proc (-1 none)
  long long rchar = -1, wchar = -1;  // /proc/<pid>/io
  // /proc/<pid>/schedstat when the evidence was taken (-1 unreadable): time
  // on a CPU and runnable on a run queue, and the node's CLOCK_MONOTONIC
  // then (differences between two gathers of one rank are comparable).
  long long cpu_ns = -1, runq_ns = -1;
  std::int64_t sched_at_ns = 0;
  // Its time inside collectives so far (the record's cumulative count, as
  // of its last exit from one; -1 unknown: a GPU or threaded rank, whose
  // host time inside says nothing of its waits). Taken with cpu_ns.
  long long coll_in_ns = -1;
  // The clock of the CPU it last ran on, kHz (-1 unknown: no cpufreq).
  long cpu_khz = -1;
  // Its user-space stack (innermost first, at most kMaxStackFrames), taken
  // by scout-stack once it had been stalled for a while and kept until it
  // progresses again; or why it could not be taken. Empty both: none taken.
  std::vector<std::string> stack;
  std::string stack_error;
  int steps = 0;             // training steps seen (see step_timing.hpp)
  double step_s = 0, compute_s = 0, wait_s = 0;  // medians over recent steps
  double compute_jitter_s = 0;  // the robust spread of its recent steps' compute
  // Median duration of this rank's recent collectives per communicator, and
  // their robust spread (the job's own jitter sets the stragglers' guards).
  std::map<std::uint64_t, double> comm_wait, comm_jitter;
  // Memberships (world ranks) of its communicators, as the probe published.
  std::map<std::uint64_t, std::vector<int>> comm_members;
  // Its most recent collective-output signatures.
  struct OutSig {
    std::uint64_t comm = 0, call = 0, kind = 0, sig = 0;
  };
  std::vector<OutSig> outsigs;
  // How long /proc has shown `state` (sampled every few ticks).
  double state_s = 0;
  // Point-to-point (record version 6). While the rank waits in a
  // point-to-point or completion call: which, for how long, for whom.
  std::uint64_t p2p_ops = 0;      // messages completed so far
  std::string p2p_call;           // "MPI_Recv"; empty when not waiting
  double p2p_wait_s = 0;
  std::vector<int> p2p_peers;     // world ranks; -1: any source of p2p_any_comm
  bool p2p_more = false;          // waits for more peers than listed
  std::uint64_t p2p_comm = 0, p2p_any_comm = 0;
  std::int64_t p2p_tag = -1;      // a blocking call's tag (its receive side's); -1 any or several
  // A completion call's requests (record version 9): per listed peer, 'r' a
  // receive awaited, 's' a send, 'b' both, '?' unknown; empty when unknown.
  std::string p2p_dirs;
  // ... and their tags (record version 10): per listed peer, the tag of the
  // awaited receives from it and of the awaited sends to it (-2 none that
  // way, -1 several or MPI_ANY_TAG); empty when unknown.
  std::vector<std::int32_t> p2p_recv_tags, p2p_send_tags;
  // The event that ended the rank: "abort" (MPI_Abort), "signal", or
  // "mpi_error" (a call failed under MPI_ERRORS_ARE_FATAL).
  std::string end_kind;
  long long end_code = 0;         // abort error code, signal number, or MPI error class
  std::uint64_t end_addr = 0;     // faulting address; for mpi_error 1 + the standard class's index (0 none)
  std::int64_t end_ns = 0;        // CLOCK_MONOTONIC (of its node: compared on that node only)
  double end_age_s = -1;          // how long before the evidence was taken it was written (-1 unknown)
  std::uint64_t end_seq = 0;
  std::string end_call;           // the call it was in then (point-to-point, or its collective), if known
  bool ended_on_stop = false;     // the end event came after the launcher said it stops the job
  // Per-peer counters (world rank): messages, and time waited for each.
  struct Peer {
    std::uint64_t sent = 0, recvd = 0, sent_bytes = 0, recvd_bytes = 0, waits = 0;
    double wait_s = 0;
    double send_wait_s = 0;  // blocked in blocking sends to this peer (a late receiver)
  };
  std::map<int, Peer> peers;
  // A GPU rank (record version 7, libscout_nccl.so): its operations are
  // issued by the host (seq) and executed later by the GPU.
  struct Gpu {
    bool present = false;       // the record is an NCCL probe's
    std::string bus_id;         // PCI bus id ("" unknown)
    int device = -1;            // CUDA ordinal in the rank's process
    bool tracking = false;      // completion is tracked with events
    std::uint64_t started = 0;  // operations the GPU has begun
    std::uint64_t done = 0;     // operations the GPU has completed
    double idle_s = 0;          // since `done` last advanced
    std::uint64_t captured = 0, untracked = 0;
    // Per communicator: operations issued, begun and completed on it.
    struct CommOps {
      std::uint64_t id = 0, issued = 0, begun = 0, done = 0;
    };
    std::vector<CommOps> comms;
  };
  Gpu gpu;
  // A threaded rank (record version 8, MPI_THREAD_MULTIPLE): each
  // communicator's collectives counted apart, and what each thread that
  // called MPI is in now. Present only for such ranks.
  bool threaded = false;
  std::uint64_t threads_full = 0;  // threads that called MPI after every slot was taken
  std::uint64_t comms_full = 0;    // collectives on communicators its full table could not take
  struct CommProgress {
    std::uint64_t id = 0, entered = 0, completed = 0, fingerprint = 0;
    std::uint32_t kind = 0;  // of the last one entered
    double since_s = 0;      // since its counts last moved (the observer's clock)
  };
  std::vector<CommProgress> comm_progress;  // at most kMaxProgressComms
  struct Thread {
    long tid = 0;
    std::uint32_t coll_kind = 0;  // the collective it is inside, 0 when none
    std::uint64_t coll_comm = 0, coll_ordinal = 0;
    double coll_s = 0;
    std::string p2p_call;         // the point-to-point call it waits in, "" when none
    double p2p_wait_s = 0;
    std::vector<int> p2p_peers;   // world ranks; -1: any source
    std::uint64_t p2p_comm = 0;
  };
  std::vector<Thread> threads;  // at most kMaxThreads
};
inline constexpr std::size_t kMaxProgressComms = 32;
inline constexpr std::size_t kMaxThreads = 16;

void to_json(nlohmann::json& j, const RankEvidence& e);
void from_json(const nlohmann::json& j, RankEvidence& e);

}  // namespace scout::scoutd
