// The per-rank shared-memory record (its C ABI: abi/scout_record_v6.h, which
// starts with version 5 unchanged): written by the probe inside a training
// rank, read by scoutd, which accepts versions 5 and 6. A seqlock guards the live part so a
// reader never sees a torn record. The writer side is header-only and must
// never allocate, lock, log or make a syscall.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "libc3/abi/scout_record_v7.h"
#include "libc3/abi/scout_record_v8.h"
#include "libc3/abi/scout_record_v9.h"
#include "libc3/abi/scout_record_v10.h"

namespace scout::c3 {

inline constexpr std::uint64_t kRecordMagic = SCOUT_RECORD_MAGIC;  // "SOUTPRB1" LE
inline constexpr std::uint32_t kRecordVersion = SCOUT_RECORD_VERSION_6;  // the MPI probe's before version 9 (still read)
inline constexpr std::uint32_t kRecordVersionOld = SCOUT_RECORD_VERSION_5;  // still read
inline constexpr std::uint32_t kRecordVersionGpu = SCOUT_RECORD_VERSION_7;  // written by libscout_nccl.so
inline constexpr std::uint32_t kRecordVersionMt = SCOUT_RECORD_VERSION_8;   // libscout_probe.so, threads apart
inline constexpr std::uint32_t kRecordVersionDirs = SCOUT_RECORD_VERSION_9; // libscout_probe.so before version 10 (still read)
inline constexpr std::uint32_t kRecordVersionTags = SCOUT_RECORD_VERSION_10; // libscout_probe.so, request directions and tags
inline constexpr std::uint64_t kRingSize = SCOUT_RECORD_V5_RING;  // recent collectives kept per rank
inline constexpr std::size_t kCommTable = SCOUT_RECORD_V5_COMMS;    // communicators published
inline constexpr std::size_t kCommMembers = SCOUT_RECORD_V5_MEMBERS;  // members stored per communicator
inline constexpr std::size_t kOutSigRing = SCOUT_RECORD_V5_OUTSIGS;  // signed outputs kept

// Collective kinds (stable codes: they go into fingerprints and the ledger).
enum CollKind : std::uint32_t {
  kCollNone = 0, kAllgather, kAllgatherv, kAllreduce, kAlltoall, kAlltoallv, kAlltoallw,
  kBarrier, kBcast, kExscan, kGather, kGatherv, kReduce, kReduceScatter,
  kReduceScatterBlock, kScan, kScatter, kScatterv, kNeighborAllgather,
  kNeighborAllgatherv, kNeighborAlltoall, kNeighborAlltoallv, kNeighborAlltoallw,
  kSend, kRecv,  // NCCL orders its sends and receives on the stream like collectives
  kCollKindCount
};
const char* coll_name(std::uint32_t kind) noexcept;  // "allreduce", "ibarrier" uses flag

// The datatype and reduction codes a probe records in live.datatype and
// live.op: the MPI probe's (probe_state.cpp: datatype_code, op_code; a
// derived datatype is 0x10000000 | its size) or, `nccl`, ncclDataType_t + 1
// and ncclRedOp_t + 1. Names ("MPI_INT", "ncclFloat16", "a derived
// datatype of 16 bytes", "a user-defined operation"), and a datatype's size
// in bytes (0 unknown; the MPI sizes of an LP64 Linux).
std::string datatype_name(std::uint64_t code, bool nccl);
std::uint64_t datatype_size(std::uint64_t code, bool nccl) noexcept;
std::string op_name(std::uint64_t code, bool nccl);

inline constexpr std::uint32_t kFlagNonblocking = 1u << 8;  // OR-ed into kind

// Life-cycle flags.
inline constexpr std::uint32_t kStateInitialized = 1;
inline constexpr std::uint32_t kStateFinalized = 2;

// The layout is the C ABI of abi/scout_record_v5.h; these are its C++ names.
using RecordLive = scout_record_live_v5;
using RingSlot = scout_ring_slot_v5;
using CommEntry = scout_comm_entry_v5;
using OutSig = scout_outsig_v5;
static_assert(std::is_trivially_copyable_v<RecordLive>);
static_assert(sizeof(RecordLive) % 8 == 0);
static_assert(kRingSize == SCOUT_RECORD_V5_RING && kCommTable == SCOUT_RECORD_V5_COMMS &&
              kCommMembers == SCOUT_RECORD_V5_MEMBERS && kOutSigRing == SCOUT_RECORD_V5_OUTSIGS);

// What a reader gets for one collective from the ring.
struct CollEvent {
  std::uint64_t seq, fingerprint, kind, entry_ns, exit_ns;
  std::uint64_t comm = 0;  // communicator identity
};

using RankRecord = scout_record_v5;
static_assert(offsetof(RankRecord, lock) % 64 == 0);
static_assert(sizeof(RankRecord) == 20096 && offsetof(RankRecord, live) == 200 && offsetof(RankRecord, outsigs) == 7768,
              "record v5 layout changed: write abi/scout_record_v6.h instead");

// Version 6: version 5 at the front, then the point-to-point part.
using RecordV6 = scout_record_v6;
using P2PLive = scout_p2p_live_v6;
using EndEvent = scout_end_v6;
using PeerSlot = scout_peer_v6;
inline constexpr std::size_t kPeerSlots = SCOUT_RECORD_V6_PEERS;
inline constexpr std::size_t kBlockedPeers = SCOUT_RECORD_V6_BLOCKED;
inline constexpr std::int64_t kPeerAny = SCOUT_PEER_ANY;
static_assert(std::is_trivially_copyable_v<P2PLive> && sizeof(P2PLive) % 8 == 0);
static_assert(offsetof(RecordV6, v5) == 0 && offsetof(RecordV6, p2p_lock) == 20096 && sizeof(RecordV6) == 24448,
              "record v6 layout changed: write abi/scout_record_v7.h instead");
// The name of a point-to-point or completion call ("MPI_Recv"), "" for none.
const char* p2p_call_name(std::uint64_t call) noexcept;
// The version-6 part of a record whose header said version 6 (and whose
// mapping covers sizeof(RecordV6)); null for version 5.
inline const RecordV6* as_v6(const RankRecord& r, std::uint32_t version) noexcept {
  return version >= SCOUT_RECORD_VERSION_6 ? reinterpret_cast<const RecordV6*>(&r) : nullptr;
}

// Version 7: version 6 at the front, then the GPU part (libscout_nccl.so).
using RecordV7 = scout_record_v7;
using GpuLive = scout_gpu_live_v7;
static_assert(std::is_trivially_copyable_v<GpuLive> && sizeof(GpuLive) % 8 == 0);
using CommOps = scout_comm_ops_v7;
inline constexpr std::size_t kCommOps = SCOUT_RECORD_V7_COMM_OPS;
static_assert(offsetof(RecordV7, v6) == 0 && offsetof(RecordV7, source) == sizeof(RecordV6) &&
                  offsetof(RecordV7, gpu_lock) % 64 == 0 && sizeof(RecordV7) == 25152,
              "record v7 layout changed: write abi/scout_record_v8.h instead");
inline const RecordV7* as_v7(const RankRecord& r, std::uint32_t version) noexcept {
  return version == SCOUT_RECORD_VERSION_7 ? reinterpret_cast<const RecordV7*>(&r) : nullptr;
}
inline RecordV7& v7_of(RankRecord& r) noexcept { return *reinterpret_cast<RecordV7*>(&r); }
// The record size a version implies (0: not a version scout reads).
std::size_t record_size_of(std::uint32_t version) noexcept;
// Reader side: a consistent copy of the GPU part; range checks of it.
bool gpu_read(const RecordV7& r, GpuLive& out, int tries = 1000) noexcept;
std::string gpu_check_live(const GpuLive& g, std::uint64_t issued);
// The per-communicator progress table: copies the slots in use (at most
// kCommOps) and checks each (begun <= issued + slack, done <= begun);
// empty when sane, otherwise why not.
std::string comm_ops_read(const RecordV7& r, std::vector<CommOps>& out);
inline RecordV6& v6_of(RankRecord& r) noexcept { return *reinterpret_cast<RecordV6*>(&r); }

// Version 8: version 6 at the front, then the MPI probe's progress per
// communicator and its threads' waits (a sibling of version 7).
using RecordV8 = scout_record_v8;
using CommProgress = scout_comm_progress_v8;
using ThreadSlot = scout_thread_v8;
inline constexpr std::size_t kProgressComms = SCOUT_RECORD_V8_COMMS;
inline constexpr std::size_t kThreadSlots = SCOUT_RECORD_V8_THREADS;
static_assert(std::is_trivially_copyable_v<CommProgress> && sizeof(CommProgress) % 8 == 0);
static_assert(std::is_trivially_copyable_v<ThreadSlot> && sizeof(ThreadSlot) % 8 == 0);
static_assert(offsetof(RecordV8, v6) == 0 && offsetof(RecordV8, source) == sizeof(RecordV6) && sizeof(RecordV8) == 29376,
              "record v8 layout changed: write abi/scout_record_v9.h instead");
inline const RecordV8* as_v8(const RankRecord& r, std::uint32_t version) noexcept {
  return version == SCOUT_RECORD_VERSION_8 ? reinterpret_cast<const RecordV8*>(&r) : nullptr;
}
inline RecordV8& v8_of(RankRecord& r) noexcept { return *reinterpret_cast<RecordV8*>(&r); }

// Version 9: version 6 at the front, then which way each request a
// completion call waits for goes (the MPI probe, unthreaded programs).
using RecordV9 = scout_record_v9;
using P2PDirs = scout_p2p_dirs_v9;
static_assert(std::is_trivially_copyable_v<P2PDirs> && sizeof(P2PDirs) % 8 == 0);
static_assert(offsetof(RecordV9, v6) == 0 && offsetof(RecordV9, source) == sizeof(RecordV6) &&
                  offsetof(RecordV9, dirs_lock) % 64 == 0 && sizeof(RecordV9) == 24576,
              "record v9 layout changed: write abi/scout_record_v10.h instead");
inline const RecordV9* as_v9(const RankRecord& r, std::uint32_t version) noexcept {  // version 10 holds 9
  return version == SCOUT_RECORD_VERSION_9 || version == SCOUT_RECORD_VERSION_10 ? reinterpret_cast<const RecordV9*>(&r)
                                                                                 : nullptr;
}
inline RecordV9& v9_of(RankRecord& r) noexcept { return *reinterpret_cast<RecordV9*>(&r); }
// Reader side: a consistent copy of the directions; empty when sane (each
// mask within the peers listed, npeers of the p2p part), otherwise why not.
bool dirs_read(const RecordV9& r, P2PDirs& out, int tries = 1000) noexcept;
std::string dirs_check(const P2PDirs& d, std::uint64_t npeers);

// Version 10: version 9 at the front, then the tag of the awaited requests
// per listed peer and direction (the MPI probe, unthreaded programs).
using RecordV10 = scout_record_v10;
using P2PTags = scout_p2p_tags_v10;
inline constexpr std::int64_t kTagNone = SCOUT_TAG_NONE;
inline constexpr std::int64_t kTagSeveral = SCOUT_TAG_SEVERAL;
static_assert(std::is_trivially_copyable_v<P2PTags> && sizeof(P2PTags) % 8 == 0);
static_assert(offsetof(RecordV10, v9) == 0 && offsetof(RecordV10, tags_lock) == sizeof(RecordV9) &&
                  offsetof(RecordV10, tags) == 24584 && sizeof(RecordV10) == 24768,
              "record v10 layout changed: write abi/scout_record_v11.h instead");
inline const RecordV10* as_v10(const RankRecord& r, std::uint32_t version) noexcept {
  return version == SCOUT_RECORD_VERSION_10 ? reinterpret_cast<const RecordV10*>(&r) : nullptr;
}
inline RecordV10& v10_of(RankRecord& r) noexcept { return *reinterpret_cast<RecordV10*>(&r); }
// Reader side: a consistent copy of the tags; empty when sane (a tag where
// `dirs` says a request goes that way, kTagNone where it says none, each
// tag >= 0 or kTagSeveral), otherwise why not.
bool tags_read(const RecordV10& r, P2PTags& out, int tries = 1000) noexcept;
std::string tags_check(const P2PTags& t, const P2PDirs& d, std::uint64_t npeers);
// Reader side: consistent copies of the communicators' progress entries in
// use and of the thread slots in use (tid != 0), each range-checked; empty
// when sane, otherwise why not. An entry or slot whose writer stayed inside
// for every try is left out (`busy` counts them).
std::string comm_progress_read(const RecordV8& r, std::vector<CommProgress>& out, std::size_t* busy = nullptr);
std::string threads_read(const RecordV8& r, std::int32_t world_size, std::vector<ThreadSlot>& out,
                         std::size_t* busy = nullptr);

// A seqlock's single writer: odd while inside, fields stored relaxed.
inline void seqlock_write_begin(std::uint64_t& lock) noexcept {
  std::uint64_t s = __atomic_load_n(&lock, __ATOMIC_RELAXED);
  __atomic_store_n(&lock, s + 1, __ATOMIC_RELAXED);
  std::atomic_thread_fence(std::memory_order_release);
}
inline void seqlock_write_end(std::uint64_t& lock) noexcept {
  std::uint64_t s = __atomic_load_n(&lock, __ATOMIC_RELAXED);
  __atomic_store_n(&lock, s + 1, __ATOMIC_RELEASE);
}
inline void p2p_write_begin(RecordV6& r) noexcept { seqlock_write_begin(r.p2p_lock); }
inline void p2p_write_end(RecordV6& r) noexcept { seqlock_write_end(r.p2p_lock); }
// Reader side: a consistent copy of the point-to-point part.
bool p2p_read(const RecordV6& r, P2PLive& out, int tries = 1000) noexcept;
// Range checks of a consistent copy (empty when sane, otherwise why not).
std::string p2p_check_live(const P2PLive& l, std::int32_t world_size);
// The end event once complete (tag set), range-checked; false when none yet.
// `why` is set when it is present but malformed.
bool end_read(const RecordV6& r, EndEvent& out, std::string* why) noexcept;
// The standard MPI error classes, in the order the probe numbers them (an
// MPI error's end event: addr is SCOUT_END_MPI_ERROR | 1 + the index): the same names whatever
// values an MPI library gives the classes.
inline constexpr const char* kMpiErrorClassNames[] = {
    "MPI_ERR_BUFFER", "MPI_ERR_COUNT",    "MPI_ERR_TYPE",      "MPI_ERR_TAG",     "MPI_ERR_COMM",
    "MPI_ERR_RANK",   "MPI_ERR_REQUEST",  "MPI_ERR_ROOT",      "MPI_ERR_GROUP",   "MPI_ERR_OP",
    "MPI_ERR_TOPOLOGY", "MPI_ERR_DIMS",   "MPI_ERR_ARG",       "MPI_ERR_UNKNOWN", "MPI_ERR_TRUNCATE",
    "MPI_ERR_OTHER",  "MPI_ERR_INTERN",   "MPI_ERR_IN_STATUS", "MPI_ERR_PENDING", "MPI_ERR_KEYVAL",
    "MPI_ERR_NO_MEM", "MPI_ERR_INFO",     "MPI_ERR_WIN",       "MPI_ERR_SIZE",    "MPI_ERR_DISP",
    "MPI_ERR_FILE",   "MPI_ERR_IO",       "MPI_ERR_SPAWN",     "MPI_ERR_RMA_SYNC"};
inline constexpr std::size_t kMpiErrorClassCount = sizeof kMpiErrorClassNames / sizeof kMpiErrorClassNames[0];

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

// The largest sequence number a reader accepts (a rank doing a collective
// every nanosecond for 146 years): larger ones are a corrupt or hostile record.
inline constexpr std::uint64_t kMaxSeq = std::uint64_t{1} << 62;

// Checks a copy of communicator `index` (stored <= MEMBERS, stored <= size,
// members >= 0); empty when it holds, otherwise why not.
std::string comm_entry_check(const CommEntry& e, std::size_t index);

// Range checks of a consistent copy of the live part; empty when it is sane,
// otherwise why not (the reader then reports the rank's record as invalid).
std::string record_check_live(const RecordLive& l);

// Writer side (probe). Single writer per record.
inline void record_write_begin(RankRecord& r) noexcept { seqlock_write_begin(r.lock); }
inline void record_write_end(RankRecord& r) noexcept { seqlock_write_end(r.lock); }
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

// Header validation for a mapping of `mapped_bytes`: version 5, 6, 7 or 8 (its
// size, which the mapping must cover). Empty string if valid,
// otherwise a message that says what was expected.
std::string record_check_header(const RankRecord& r, std::size_t mapped_bytes);

// The one place the record name scheme is built. POSIX shm name of a rank's
// record: /scout.<job>.<step>.<rank>; the file-name prefix (in /dev/shm, no
// slash) of a step's records, scout.<job>.<step>., or of every step of a
// job, scout.<job>. when `step` is empty.
std::string record_shm_name(const std::string& job, const std::string& step, int rank);
std::string record_shm_prefix(const std::string& job, const std::string& step = "");

}  // namespace scout::c3
