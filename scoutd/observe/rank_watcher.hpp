// The local half of scoutd: attaches the shm records of this node's ranks,
// polls them every tick, notes when each last made progress, and timestamps
// process deaths the moment they happen (pidfd). Runs in its own thread so
// that observation goes on while a consensus round waits on a deadline.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "libc3/rank_record.hpp"
#include "scoutd/detect/progress_detector.hpp"
#include "scoutd/observe/step_timing.hpp"

namespace scout::scoutd {

inline constexpr int kComputeBins = 32;  // half-octave bins from 0.1 ms

struct LocalSummary {
  double max_stall_s = 0;     // over live, unfinalized, attached ranks
  std::uint32_t waiting = 0;  // of those, inside a collective
  std::uint32_t attached = 0;
  std::uint32_t finalized = 0;
  std::uint32_t unreported_deaths = 0;
  std::uint64_t min_seq = UINT64_MAX, max_seq = 0;
  // Histogram of the ranks' median compute time per step, for the trigger
  // (a fixed size, whatever the number of ranks), and its maximum.
  std::uint32_t compute_hist[kComputeBins] = {};
  double max_compute_s = 0;
  // The same for every (rank, communicator) median collective duration.
  std::uint32_t comm_hist[kComputeBins] = {};
  double max_comm_s = 0;
  std::uint32_t outsig_new = 0;  // collective-output signatures read since the last gather
  double max_stopped_s = 0;      // longest a rank has been stopped/D/zombie without progress
  std::uint32_t ended = 0;       // ranks whose record holds an end event (abort, fatal signal)
  // Ranks whose exchanges moved since the previous summary: point-to-point
  // messages completed, or a collective-only CPU rank's collectives (both
  // are compared with their own past in windows: the change point).
  std::uint32_t p2p_active = 0;
};

int compute_bin(double seconds);
double compute_bin_upper(int bin);

// What the rounds read of a node's ranks: RankWatcher in scoutd (the
// records and /proc), a workload model in the simulator (sim/).
class RankSource {
 public:
  virtual ~RankSource() = default;
  virtual const std::string& node() const noexcept = 0;
  virtual LocalSummary summary() const = 0;
  // Full evidence for each local rank. `for_gather`: the output signatures
  // read so far count as delivered.
  virtual std::vector<RankEvidence> evidence(bool for_gather = false) const = 0;
  // Deaths included in an evidence gather that completed are reported.
  virtual void mark_deaths_reported(const std::vector<int>& ranks) = 0;
};

class RankWatcher final : public RankSource {
 public:
  // With a non-empty match_host, the ranks are discovered from the records
  // of the step present in /dev/shm, and only those whose host field equals
  // match_host are observed (Slurm: ranks find their node by SLURMD_NODENAME,
  // whatever launched them); first/last_rank are then only a hint.
  RankWatcher(std::string job, std::string step, int first_rank, int last_rank, std::string node,
              double tick_s, std::string match_host = "", std::uint32_t step_kind = 0);
  ~RankWatcher();
  RankWatcher(const RankWatcher&) = delete;
  RankWatcher& operator=(const RankWatcher&) = delete;

  void start();
  void stop();
  // One more look at the records now, from the caller's thread (the stop
  // round's: a job that lived less than a tick still has its ranks, their
  // deaths and end events in the last evidence).
  void refresh();

  LocalSummary summary() const override;
  // Full evidence for each local rank, /proc state included.
  std::vector<RankEvidence> evidence(bool for_gather = false) const override;
  void mark_deaths_reported(const std::vector<int>& ranks) override;
  // Ranks seen for the first time since the last call (for the ledger).
  std::vector<std::pair<int, int>> take_new_attachments();
  // Live ranks stalled for at least `min_s` whose stack has not been taken
  // during this stall (key: the stall's progress key, for set_stack).
  struct StackWanted {
    int rank = 0, pid = 0;
    std::uint64_t key = 0;
  };
  std::vector<StackWanted> stacks_wanted(double min_s) const;
  // Every live rank (for scoutctl stacks).
  std::vector<StackWanted> live_ranks() const;
  // scout-stack is about to stop the rank for a moment (on) or has let it go
  // (off): its /proc state then is the tracer's, not the rank's.
  void set_tracing(int rank, bool on);
  // Keeps a stack taken for a stall; dropped when the rank progresses.
  void set_stack(int rank, std::uint64_t key, std::vector<std::string> frames, std::string error);
  // Removes the shm names of this node's ranks (crashed ranks leave theirs).
  void unlink_records();
  const std::string& node() const noexcept override { return node_; }
  // The launcher is stopping the job (scout-run got the user's Ctrl-C):
  // the deaths that follow are the stop's, not crashes. Async-signal-safe
  // (scoutd calls it from its SIGUSR2 handler); the first call's time holds.
  static void note_job_stopping() noexcept;
  static std::int64_t job_stopping_ns() noexcept;  // 0 until then
  int first_rank() const noexcept { return first_; }
  int last_rank() const noexcept { return last_; }

 private:
  static bool died_on_stop(std::int64_t death_ns) noexcept;
  struct Slot {
    int rank = 0;
    c3::RankRecord* rec = nullptr;  // mapping (kept after the name is unlinked)
    std::string bad_record;         // why the record was refused, once
    std::string invalid;            // why a mapped record was dropped (record_invalid)
    int pidfd = -1;
    int pid = 0;
    bool announced = false;
    c3::RecordLive last{};
    bool have_last = false;
    std::uint64_t progress_key = 0;
    std::int64_t last_progress_ns = 0;
    std::int64_t death_ns = 0;
    bool death_reported = false;
    bool foreign = false;  // a rank of another node
    std::vector<c3::CollEvent> history;  // recent collectives, by seq
    StepStats steps;
    std::map<std::uint64_t, double> comm_wait, comm_jitter;
    std::map<std::uint64_t, std::vector<int>> comm_members;  // published, complete ones
    std::uint64_t comms_read = 0;
    mutable std::vector<RankEvidence::OutSig> outsigs;  // undelivered, newest last
    std::uint64_t outsig_next = 0;
    std::size_t map_len = 0;        // bytes mapped (the record's version decides)
    std::uint32_t version = 0;
    std::int32_t world_size = 0;
    c3::P2PLive p2p{};              // version 6: the point-to-point part
    bool have_p2p = false;
    c3::P2PDirs dirs{};             // version 9: which way a completion call's requests go
    bool have_dirs = false;
    c3::P2PTags tags{};             // version 10: their tags per peer and direction
    bool have_tags = false;
    c3::EndEvent end{};             // its end event, once written
    bool have_end = false;
    mutable std::uint64_t ops_summarised = 0;  // p2p.ops at the previous summary
    mutable std::uint64_t seq_summarised = 0;  // its collectives at the previous summary
    std::map<int, RankEvidence::Peer> peers;  // per-peer counters (read every few ticks)
    c3::GpuLive gpu{};              // version 7: GPU completion
    std::vector<c3::CommOps> comm_ops;  // ... per communicator
    bool have_gpu = false;
    std::string gpu_bus;
    int gpu_device = -1;
    std::int64_t gpu_done_ns = 0;   // when gpu.done last advanced (scoutd's clock)
    // Version 8 (MPI_THREAD_MULTIPLE): each communicator's collectives, when
    // its counts last moved (scoutd's clock), and the threads' calls.
    bool have_threads = false;
    std::vector<c3::CommProgress> comm_progress;
    std::map<std::uint64_t, std::pair<std::uint64_t, std::int64_t>> progress_moved;  // id -> (counts, when)
    std::vector<c3::ThreadSlot> threads;
    std::uint64_t threads_full = 0, comms_full = 0;
    char state = '?';               // sampled /proc state, and since when
    std::int64_t state_since_ns = 0;
    // Its stack, taken during the stall that began at progress_key == stack_key.
    bool tracing = false;  // scout-stack holds it now (set_tracing)
    bool have_stack = false;
    std::uint64_t stack_key = 0;
    std::vector<std::string> stack;
    std::string stack_error;
  };
  static constexpr std::size_t kMaxSlots = 65536;
  void loop();
  void tick();
  void discover();
  void try_attach(Slot& s);
  void invalidate(Slot& s, const std::string& why);
  void poll_deaths(int timeout_ms);
  bool read_v6(Slot& s, std::int64_t now, bool counters);
  bool read_gpu(Slot& s, std::int64_t now);
  bool read_threads(Slot& s, std::int64_t now);

  std::string job_, step_, node_, match_host_;
  std::uint32_t step_kind_ = 0;
  int first_, last_;
  double tick_s_;
  mutable std::mutex mu_;
  std::vector<Slot> slots_;
  std::set<int> known_;  // ranks with a slot (discovery mode)
  std::uint64_t ticks_ = 0;
  bool slots_full_logged_ = false;
  mutable std::uint64_t outsig_new_ = 0;  // since the last evidence()
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::int64_t monotonic_ns();

}  // namespace scout::scoutd
