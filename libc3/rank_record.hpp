// The per-rank shared-memory record: written by the probe inside a training
// rank (single writer), read by scoutd. A seqlock guards the live part so a
// reader never sees a torn record. The writer side is header-only and must
// never allocate, lock, log or make a syscall.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace scout::c3 {

inline constexpr std::uint64_t kRecordMagic = 0x3142525054554F53ULL;  // "SOUTPRB1" LE
inline constexpr std::uint32_t kRecordVersion = 5;
inline constexpr std::uint64_t kRingSize = 64;  // recent collectives kept per rank

// Collective kinds (stable codes: they go into fingerprints and the ledger).
enum CollKind : std::uint32_t {
  kCollNone = 0, kAllgather, kAllgatherv, kAllreduce, kAlltoall, kAlltoallv, kAlltoallw,
  kBarrier, kBcast, kExscan, kGather, kGatherv, kReduce, kReduceScatter,
  kReduceScatterBlock, kScan, kScatter, kScatterv, kNeighborAllgather,
  kNeighborAllgatherv, kNeighborAlltoall, kNeighborAlltoallv, kNeighborAlltoallw,
  kCollKindCount
};
const char* coll_name(std::uint32_t kind) noexcept;  // "allreduce", "ibarrier" uses flag

inline constexpr std::uint32_t kFlagNonblocking = 1u << 8;  // OR-ed into kind

// Life-cycle flags.
inline constexpr std::uint32_t kStateInitialized = 1;
inline constexpr std::uint32_t kStateFinalized = 2;

// The live part, copied under the seqlock. All 8-byte fields so it can be
// copied word by word with relaxed atomics (no data race, no torn words).
struct alignas(8) RecordLive {
  std::uint64_t seq;           // collectives entered so far (monotonic)
  std::uint64_t fingerprint;   // of the current / last collective
  std::uint64_t comm_id;       // identity of its communicator
  std::uint64_t kind;          // CollKind | kFlagNonblocking
  std::int64_t count;
  std::uint64_t datatype;      // stable datatype code (see probe)
  std::uint64_t op;            // stable op code
  std::int64_t root;
  std::uint64_t in_collective; // 1 while inside a collective (or its wait)
  std::uint64_t entry_ns;      // CLOCK_MONOTONIC of the last entry
  std::uint64_t exit_ns;       // CLOCK_MONOTONIC of the last exit
  std::uint64_t inside_ns;     // cumulative time inside collectives
  std::uint64_t outside_ns;    // cumulative time outside (compute)
  std::uint64_t state;         // kState* flags
  std::uint64_t out_sig;       // signature of a sampled collective output
  std::uint64_t out_sig_seq;   // seq of the collective out_sig belongs to
};
static_assert(std::is_trivially_copyable_v<RecordLive>);
static_assert(sizeof(RecordLive) % 8 == 0);

// One recent collective, in slot seq % kRingSize. `tag` is the collective's
// seq once the slot is complete for that collective (0 while rewritten).
struct alignas(8) RingSlot {
  std::uint64_t tag;
  std::uint64_t fingerprint;
  std::uint64_t entry_ns;
  std::uint64_t exit_ns;  // 0 while still inside
};

// A communicator this rank belongs to, published once when it is created:
// its identity and its members as world ranks (the first kCommMembers).
inline constexpr std::size_t kCommTable = 16;
inline constexpr std::size_t kCommMembers = 64;
struct CommEntry {
  std::uint64_t id;
  std::uint32_t size;
  std::uint32_t stored;  // members[] holds min(size, kCommMembers)
  std::int32_t members[kCommMembers];
};

// A signed collective output: every Nth Allreduce, Bcast and Allgather of a
// communicator (N from SCOUT_OUTSIG_EVERY), in slot (index % kOutSigRing).
// `tag` is index + 1 once the slot is complete (0 while rewritten).
inline constexpr std::size_t kOutSigRing = 256;
struct alignas(8) OutSig {
  std::uint64_t tag;
  std::uint64_t comm;    // communicator identity
  std::uint64_t call;    // ordinal of the signable collective on that communicator
  std::uint64_t kind;    // CollKind
  std::uint64_t sig;     // libc3 signature of the output buffer
  std::uint64_t bytes;
};

// What a reader gets for one collective from the ring.
struct CollEvent {
  std::uint64_t seq, fingerprint, kind, entry_ns, exit_ns;
  std::uint64_t comm = 0;  // communicator identity
};

struct RankRecord {
  // Header: written once before the record is published, then read-only.
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t size;       // sizeof(RankRecord) of the writer
  std::int32_t world_rank;
  std::int32_t world_size;
  std::int32_t pid;
  std::int32_t reserved0;
  std::uint64_t start_ns;   // CLOCK_MONOTONIC at MPI_Init
  char job_id[32];
  char step_id[16];
  char host[64];
  // Seqlock: odd while the writer is inside an update.
  alignas(64) std::atomic<std::uint64_t> lock;
  RecordLive live;
  // The last kRingSize collectives (outside the seqlock: each slot is
  // validated by its tag), for step detection and per-step timing.
  RingSlot ring[kRingSize];
  std::uint64_t ring_kind[kRingSize];  // collective kind per slot
  std::uint64_t ring_comm[kRingSize];  // communicator identity per slot
  // Communicators, append-only: entries [0, comm_count) are complete.
  std::uint64_t comm_count;
  CommEntry comms[kCommTable];
  // Output signatures: outsig_count written so far, the last kOutSigRing kept.
  std::uint64_t outsig_count;
  OutSig outsigs[kOutSigRing];
};

inline void outsig_push(RankRecord& r, std::uint64_t comm, std::uint64_t call, std::uint64_t kind,
                        std::uint64_t sig, std::uint64_t bytes) noexcept {
  const std::uint64_t n = __atomic_load_n(&r.outsig_count, __ATOMIC_RELAXED);
  OutSig& s = r.outsigs[n % kOutSigRing];
  __atomic_store_n(&s.tag, 0, __ATOMIC_RELAXED);
  std::atomic_thread_fence(std::memory_order_release);
  __atomic_store_n(&s.comm, comm, __ATOMIC_RELAXED);
  __atomic_store_n(&s.call, call, __ATOMIC_RELAXED);
  __atomic_store_n(&s.kind, kind, __ATOMIC_RELAXED);
  __atomic_store_n(&s.sig, sig, __ATOMIC_RELAXED);
  __atomic_store_n(&s.bytes, bytes, __ATOMIC_RELAXED);
  __atomic_store_n(&s.tag, n + 1, __ATOMIC_RELEASE);
  __atomic_store_n(&r.outsig_count, n + 1, __ATOMIC_RELEASE);
}

// Reads the output signatures with index >= from (at most kOutSigRing, the
// newest), oldest first, skipping slots being rewritten; sets *next to the
// index to read from next time. Returns how many were written to out.
std::size_t outsig_read(const RankRecord& r, std::uint64_t from, OutSig* out, std::uint64_t* next) noexcept;

// Writer side (probe). Single writer per record.
inline void record_write_begin(RankRecord& r) noexcept {
  std::uint64_t s = r.lock.load(std::memory_order_relaxed);
  r.lock.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
}
inline void record_write_end(RankRecord& r) noexcept {
  std::uint64_t s = r.lock.load(std::memory_order_relaxed);
  r.lock.store(s + 1, std::memory_order_release);
}
// Field stores inside begin/end must be relaxed atomic stores.
template <class T>
inline void rec_store(T& field, T value) noexcept {
  __atomic_store_n(&field, value, __ATOMIC_RELAXED);
}

inline void ring_enter(RankRecord& r, std::uint64_t seq, std::uint64_t fp, std::uint64_t kind,
                       std::uint64_t comm, std::uint64_t t) noexcept {
  RingSlot& s = r.ring[seq % kRingSize];
  __atomic_store_n(&s.tag, 0, __ATOMIC_RELAXED);
  std::atomic_thread_fence(std::memory_order_release);
  __atomic_store_n(&s.fingerprint, fp, __ATOMIC_RELAXED);
  __atomic_store_n(&s.entry_ns, t, __ATOMIC_RELAXED);
  __atomic_store_n(&s.exit_ns, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&r.ring_kind[seq % kRingSize], kind, __ATOMIC_RELAXED);
  __atomic_store_n(&r.ring_comm[seq % kRingSize], comm, __ATOMIC_RELAXED);
  __atomic_store_n(&s.tag, seq, __ATOMIC_RELEASE);
}
inline void ring_exit(RankRecord& r, std::uint64_t seq, std::uint64_t t) noexcept {
  RingSlot& s = r.ring[seq % kRingSize];
  if (__atomic_load_n(&s.tag, __ATOMIC_RELAXED) == seq) __atomic_store_n(&s.exit_ns, t, __ATOMIC_RELEASE);
}

// Reads the collectives with seq in [from, to] still in the ring, oldest
// first, skipping slots being rewritten. Returns how many were written.
std::size_t ring_read(const RankRecord& r, std::uint64_t from, std::uint64_t to, CollEvent* out) noexcept;

// Reader side: a consistent copy of the live part, or false after `tries`
// attempts that all overlapped a write.
bool record_read(const RankRecord& r, RecordLive& out, std::uint64_t* lock_value = nullptr,
                 int tries = 1000) noexcept;

// Header validation for a mapping of `mapped_bytes`. Empty string if valid,
// otherwise a message that says what was expected.
std::string record_check_header(const RankRecord& r, std::size_t mapped_bytes);

// POSIX shm name of a rank's record: /scout.<job>.<step>.<rank>
std::string record_shm_name(const std::string& job, const std::string& step, int rank);

// Job ids are decimal numbers (Slurm job ids); step ids are decimal or
// "batch" etc. Returns true when `s` is a valid job id.
bool valid_job_id(const std::string& s) noexcept;
bool valid_step_id(const std::string& s) noexcept;

}  // namespace scout::c3
