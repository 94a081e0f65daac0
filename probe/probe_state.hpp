// probe internals: the process-wide state of the preloaded probe. Runs inside
// the training process: nothing here allocates, locks, logs or makes a
// syscall once MPI_Init has returned (clock reads go through the vDSO).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <ctime>

#include "libc3/rank_record.hpp"
#include "probe/record_shm.hpp"

namespace scout::probe {

inline std::uint64_t clock_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// The probe's clock: the invariant TSC scaled to nanoseconds when the CPU has
// one (an instruction, ~10 ns cheaper than the vDSO on a kvm-clock VM),
// calibrated against CLOCK_MONOTONIC at MPI_Init; otherwise the vDSO clock.
struct ProbeClock {
  bool use_tsc = false;
  std::uint64_t tsc0 = 0, ns0 = 0;
  double ns_per_tick = 0;
};
extern ProbeClock g_clock;
void clock_calibrate() noexcept;

inline std::uint64_t now_ns() noexcept {
#if defined(__x86_64__)
  if (g_clock.use_tsc)
    return g_clock.ns0 +
           static_cast<std::uint64_t>(static_cast<double>(__builtin_ia32_rdtsc() - g_clock.tsc0) *
                                      g_clock.ns_per_tick);
#endif
  return clock_ns();
}

// Set by probe_init when the environment names a job; null means "do nothing".
extern c3::RankRecord* g_record;

// MPI_THREAD_MULTIPLE: several threads may be inside MPI (and the probe) at
// once. The seqlocks are then claimed with a compare-and-swap, so concurrent
// writers never interleave fields or leave a lock odd (the readers' protocol
// is unchanged); the section holds a few stores and never calls MPI. The
// probe's tables take a spinlock. A single-threaded program pays one branch.
extern bool g_threaded;
// Thread-local words of the probe: initial-exec TLS (the probe is preloaded,
// so they are static TLS, never allocated on a thread's first use).
#define SCOUT_TLS __attribute__((tls_model("initial-exec"))) thread_local
inline void seq_begin(std::uint64_t& lock) noexcept {
  if (!g_threaded) {
    __atomic_store_n(&lock, __atomic_load_n(&lock, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    return;
  }
  for (;;) {
    std::uint64_t s = __atomic_load_n(&lock, __ATOMIC_RELAXED);
    if (!(s & 1) && __atomic_compare_exchange_n(&lock, &s, s + 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) break;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  __atomic_thread_fence(__ATOMIC_RELEASE);
}
inline void seq_end(std::uint64_t& lock) noexcept {
  __atomic_store_n(&lock, __atomic_load_n(&lock, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
}
inline void rec_begin(c3::RankRecord& r) noexcept { seq_begin(r.lock); }
inline void rec_end(c3::RankRecord& r) noexcept { seq_end(r.lock); }
// The request and pending-collective tables: held only when threaded.
struct TableGuard {
  static int lock_;
  bool held = false;
  TableGuard() noexcept {
    if (!g_threaded) return;
    while (__atomic_exchange_n(&lock_, 1, __ATOMIC_ACQUIRE)) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    held = true;
  }
  ~TableGuard() {
    if (held) __atomic_store_n(&lock_, 0, __ATOMIC_RELEASE);
  }
  TableGuard(const TableGuard&) = delete;
  TableGuard& operator=(const TableGuard&) = delete;
};

// --- Threads (record version 8: MPI_THREAD_MULTIPLE only) -----------------
// The calling thread's slot, claimed at its first MPI call (its Linux thread
// id: one gettid system call per thread); null when the program is not
// threaded, the probe is off, or every slot is taken (threads_full counts
// those threads). Slots are not given back when a thread ends.
c3::ThreadSlot* thread_slot() noexcept;
// Communicator `id`'s progress entry, claimed at its first collective; null
// when not threaded or the table is full.
c3::CommProgress* comm_progress(std::uint64_t id) noexcept;
// The calling thread's point-to-point wait, published in its slot as
// publish_wait publishes the rank's (`ops`: its own messages so far).
void thread_wait(std::uint64_t call, std::uint64_t t, std::uint64_t comm_id, std::int64_t tag,
                 const std::int64_t* peers, int n, bool more, std::uint64_t any_comm) noexcept;
void thread_wait_done() noexcept;
void thread_count_op() noexcept;

void parse_outsig(int rank);     // SCOUT_OUTSIG_EVERY, at init (outsig.cpp)
void probe_init() noexcept;      // after PMPI_Init
void probe_finalize() noexcept;  // before PMPI_Finalize

// A registered communicator: its identity and, for point-to-point peers,
// the world rank of each member of its (remote) group.
struct CommSlot {
  MPI_Comm comm;
  std::uint64_t id;
  const int* world;  // null: MPI_COMM_WORLD (is_world) or too large to keep
  int size;         // members world[] lists (MPI_COMM_WORLD: its size); 0 if too large
  bool is_world;
};
const CommSlot* comm_lookup(MPI_Comm comm) noexcept;
// The world rank of `rank` of c; negative ranks (MPI_ANY_SOURCE,
// MPI_PROC_NULL) unchanged; -3 when unknown.
int world_rank_of(const CommSlot* c, int rank) noexcept;
std::uint64_t comm_identity(MPI_Comm comm) noexcept;
std::uint64_t current_seq() noexcept;  // collectives entered so far
void comm_register(MPI_Comm comm) noexcept;
void comm_forget(MPI_Comm comm) noexcept;
// A datatype's stable code (1.. for the predefined ones, 0x10000000 | size
// for derived ones); `size` (if given) gets its size in bytes (0 unknown).
std::uint64_t datatype_code(MPI_Datatype t, std::uint64_t* size = nullptr) noexcept;
std::uint64_t op_code(MPI_Op op) noexcept;

// Returns the collective's sequence number, which its exit names.
std::uint64_t coll_enter(std::uint32_t kind, MPI_Comm comm, std::int64_t count, MPI_Datatype dt,
                         MPI_Op op, std::int64_t root) noexcept;
void coll_exit(std::uint64_t seq) noexcept;
// After a blocking Allreduce/Bcast/Allgather returned: every Nth signable
// collective of `comm` (SCOUT_OUTSIG_EVERY, default 64, 0 off) signs its
// output buffer (count elements of dt; per member when `per_member`).
void coll_output(std::uint32_t kind, MPI_Comm comm, void* buf, std::int64_t count, MPI_Datatype dt,
                 bool per_member) noexcept;
void nb_started(MPI_Request req, std::uint64_t seq) noexcept;

// Wait/Test family support: mark which pending nonblocking collectives are in
// `reqs`, and after the call retire those that completed.
struct WaitScope {
  int slots[8];
  int idx[8];
  MPI_Request handle[8];   // the pending collectives' requests and sequence
  std::uint64_t seq[8];    // numbers, found again in done(): another thread
                           // may have moved their table slots meanwhile
  int n = 0;
  bool blocking = false;
  std::uint64_t t0 = 0;
  WaitScope(const MPI_Request* reqs, int count, bool blocking) noexcept;
  void done(const MPI_Request* reqs_after) noexcept;
};

// --- Point-to-point (p2p_state.cpp) ---------------------------------------
// A blocking send/receive-type call: publishes that the rank waits in `call`
// for the given peers (ranks of comm; MPI_ANY_SOURCE for any, MPI_PROC_NULL
// skipped) from now on; end() counts the messages and the time waited.
inline constexpr int kNoPeer = -2147483647 - 1;  // "no second peer" (MPI_PROC_NULL is a negative rank)
struct P2PBlock {
  std::uint64_t t0 = 0;
  std::uint64_t call = 0;
  const CommSlot* comm = nullptr;
  P2PBlock(std::uint64_t call, MPI_Comm comm, int tag, int peer_a, int peer_b = kNoPeer) noexcept;
  // sent: destination and bytes (dest < 0: none); recvd: source from the
  // status (or the posted one) and bytes (source < 0: none).
  void end(int dest, std::uint64_t sent_bytes, int source, std::uint64_t recvd_bytes) noexcept;
};
std::uint64_t type_bytes(MPI_Datatype dt, int count) noexcept;
// Per-peer counters (p2p_counters.cpp): a message sent to / received from a
// world rank; a blocking send's wait for its receiver, a receive's wait
// (`timed`: measured, so one sample of how long this rank waits for it).
void count_sent(c3::RecordV6& v6, int world, std::uint64_t bytes, std::uint64_t send_wait_ns = 0) noexcept;
void count_recvd(c3::RecordV6& v6, int world, std::uint64_t bytes, std::uint64_t wait_ns, bool timed) noexcept;
// Nonblocking and persistent requests: what each waits for.
void p2p_started(MPI_Request req, bool recv, MPI_Comm comm, int peer, int tag, std::uint64_t bytes,
                 bool persistent) noexcept;
void p2p_request_free(MPI_Request req) noexcept;
void p2p_persistent_start(const MPI_Request* reqs, int n) noexcept;
// Completion calls: before the call, the tracked requests among reqs[0, n)
// (and, when blocking, what the rank now waits for); after it, which of them
// completed: all (Wait/Waitall, a successful Test/Testall), one index
// (Waitany/Testany), or a list (Waitsome/Testsome).
struct P2PWait {
  static constexpr int kMax = 256;
  int slot[kMax];   // tracked request slots, -1 untracked
  int n = 0;
  std::int64_t peers[c3::kBlockedPeers];  // world ranks (kPeerAny) the tracked requests wait for
  int npeers = 0;
  bool more = false;
  std::uint64_t comm_id = 0;  // of the tracked requests, 0 when several
  std::uint64_t any_comm = 0;
  std::int64_t tag = -2;                  // the awaited requests' one tag; -1 several or any
  std::uint64_t dirs[2] = {};             // bit k: a receive from / a send to peers[k] awaited
  std::int64_t tags[2][c3::kBlockedPeers];  // their tag per peer (c3::kTagNone, c3::kTagSeveral)
  bool dirs_known = false;                // they are all the rank has in flight, each tracked
  std::uint64_t arrived[kMax / 64] = {};  // complete already when a blocking wait began
  std::uint64_t done[kMax / 64] = {};     // completed by a Waitsome of a Waitall (counted)
  bool uncharged = false;                 // several requests, not sampled: no wait is charged
  bool was_there(int i) const noexcept { return (arrived[i / 64] >> (i % 64)) & 1; }
  bool is_done(int i) const noexcept { return (done[i / 64] >> (i % 64)) & 1; }
  std::int32_t peer_of[kMax], tag_of[kMax];  // the tracked requests: peer (-2 none), tag,
  std::uint8_t recv_of[kMax];                // direction and communicator
  std::uint64_t comm_of[kMax];
  int pending = 0;                           // tracked, not arrived, not completed
  int inactive = 0;                          // tracked persistent requests not started
  bool over = false;                         // more requests than kMax
  std::int64_t charged[16];                  // peers already charged with this call's wait
  int ncharged = 0;
  std::uint64_t call = 0;
  std::uint64_t t0 = 0;
  bool blocking = false;
  bool any = false;
  P2PWait(std::uint64_t call, const MPI_Request* reqs, int count, bool blocking) noexcept;
  void completed_all(const MPI_Status* statuses) noexcept;
  void completed_one(int index, const MPI_Status* status) noexcept;
  void completed_some(int outcount, const int* indices, const MPI_Status* statuses) noexcept;
  void none_completed() noexcept;  // a Test that found nothing: the rank polls
  // Some of an MPI_Waitall's requests completed (the probe waits with
  // MPI_Waitsome): counted; publish_rest() publishes the others as what the
  // rank waits for.
  void partly_completed(int outcount, const int* indices, const MPI_Status* statuses) noexcept;
  void publish_rest() noexcept;
  // The call returned an error: what completed was counted, the rest is
  // still in flight (MPI_ERR_PENDING); the rank no longer waits.
  void abandoned() noexcept;

 private:
  void collect(std::uint64_t at) noexcept;
};
// A blocking probe (Probe/Mprobe) waits for a source like a receive.
void p2p_poll_clear() noexcept;  // a collective (or other progress) ends a polling wait
// An Iprobe/Improbe that found nothing: the rank polls for `source`.
void p2p_poll(std::uint64_t call, MPI_Comm comm, int tag, int source) noexcept;
// Mprobe/Improbe remember their communicator for the Mrecv that follows.
void p2p_mprobe_comm(MPI_Comm comm) noexcept;
MPI_Comm p2p_mprobe_last() noexcept;

// --- Job-ending events (end_events.cpp) -----------------------------------
// MPI_Abort: recorded before the call (it does not return).
void end_abort(int errorcode, MPI_Comm comm) noexcept;
// Chains handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT that record
// the signal, then run the previous handler or the default action.
void install_fatal_handlers() noexcept;
// MPI_COMM_WORLD's and MPI_COMM_SELF's handler, where it is still
// MPI_ERRORS_ARE_FATAL, becomes the probe's stand-in: it records the failing
// call's error class, then runs the library's own fatal handler (Open MPI's,
// found by name: the same message and the same end) or, elsewhere, prints the
// error and calls MPI_Abort. MPI_Comm_get_errhandler returns the stand-in.
void install_mpi_error_handler() noexcept;
// The stand-in (made on first use), or MPI_ERRHANDLER_NULL when the rank
// has no record: MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL) of the
// program sets it instead, so that a handler put back still records.
MPI_Errhandler fatal_stand_in() noexcept;

}  // namespace scout::probe
