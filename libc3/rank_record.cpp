// Reader side of the rank record protocol (see rank_record.hpp).
#include "libc3/rank_record.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>

namespace scout::c3 {

namespace {
// snprintf into a std::string: the probe links this file and must not pull
// libfmt into every training rank.
template <class... A>
std::string format_c(const char* f, A... a) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a...);
  return buf;
}
}  // namespace

const char* coll_name(std::uint32_t kind) noexcept {
  static const char* const kNames[kCollKindCount] = {
      "none", "allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "alltoallw",
      "barrier", "bcast", "exscan", "gather", "gatherv", "reduce", "reduce_scatter",
      "reduce_scatter_block", "scan", "scatter", "scatterv", "neighbor_allgather",
      "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv", "neighbor_alltoallw", "send", "recv"};
  std::uint32_t k = kind & 0xff;
  return k < kCollKindCount ? kNames[k] : "unknown";
}

namespace {
struct TypeName {
  const char* name;
  std::uint64_t size;
};
// In the order of probe_state.cpp's kTypes (code = index + 1).
constexpr TypeName kMpiTypes[] = {
    {"MPI_CHAR", 1}, {"MPI_SIGNED_CHAR", 1}, {"MPI_UNSIGNED_CHAR", 1}, {"MPI_BYTE", 1}, {"MPI_SHORT", 2},
    {"MPI_UNSIGNED_SHORT", 2}, {"MPI_INT", 4}, {"MPI_UNSIGNED", 4}, {"MPI_LONG", 8}, {"MPI_UNSIGNED_LONG", 8},
    {"MPI_LONG_LONG", 8}, {"MPI_UNSIGNED_LONG_LONG", 8}, {"MPI_FLOAT", 4}, {"MPI_DOUBLE", 8},
    {"MPI_LONG_DOUBLE", 16}, {"MPI_INT8_T", 1}, {"MPI_INT16_T", 2}, {"MPI_INT32_T", 4}, {"MPI_INT64_T", 8},
    {"MPI_UINT8_T", 1}, {"MPI_UINT16_T", 2}, {"MPI_UINT32_T", 4}, {"MPI_UINT64_T", 8}, {"MPI_C_BOOL", 1},
    {"MPI_FLOAT_INT", 8}, {"MPI_DOUBLE_INT", 12}, {"MPI_LONG_INT", 12}, {"MPI_2INT", 8}, {"MPI_SHORT_INT", 6},
    {"MPI_AINT", 8}, {"MPI_OFFSET", 8}, {"MPI_COUNT", 8}, {"MPI_WCHAR", 4}, {"MPI_C_FLOAT_COMPLEX", 8},
    {"MPI_C_DOUBLE_COMPLEX", 16}};
// ncclDataType_t + 1.
constexpr TypeName kNcclTypes[] = {{"ncclInt8", 1},    {"ncclUint8", 1},    {"ncclInt32", 4},
                                   {"ncclUint32", 4},  {"ncclInt64", 8},    {"ncclUint64", 8},
                                   {"ncclFloat16", 2}, {"ncclFloat32", 4},  {"ncclFloat64", 8},
                                   {"ncclBfloat16", 2}, {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1}};
constexpr const char* kMpiOps[] = {"MPI_MAX", "MPI_MIN",  "MPI_SUM",    "MPI_PROD",   "MPI_LAND",
                                   "MPI_BAND", "MPI_LOR", "MPI_BOR",    "MPI_LXOR",   "MPI_BXOR",
                                   "MPI_MAXLOC", "MPI_MINLOC", "MPI_REPLACE", "MPI_NO_OP"};
constexpr const char* kNcclOps[] = {"ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"};
constexpr std::uint64_t kDerived = 0x10000000ULL;
}  // namespace

std::string datatype_name(std::uint64_t code, bool nccl) {
  if (code == 0) return "no datatype";
  if (nccl) return code <= std::size(kNcclTypes) ? kNcclTypes[code - 1].name : "an unknown NCCL datatype";
  if (code <= std::size(kMpiTypes)) return kMpiTypes[code - 1].name;
  if (code & kDerived) return "a derived datatype of " + std::to_string(code & ~kDerived) + " bytes";
  return "an unknown datatype";
}

std::uint64_t datatype_size(std::uint64_t code, bool nccl) noexcept {
  if (code == 0) return 0;
  if (nccl) return code <= std::size(kNcclTypes) ? kNcclTypes[code - 1].size : 0;
  if (code <= std::size(kMpiTypes)) return kMpiTypes[code - 1].size;
  return (code & kDerived) ? (code & ~kDerived) : 0;
}

std::string op_name(std::uint64_t code, bool nccl) {
  if (code == 0) return "no operation";
  if (nccl) return code <= std::size(kNcclOps) ? kNcclOps[code - 1] : "a user-defined NCCL operation";
  if (code <= std::size(kMpiOps)) return kMpiOps[code - 1];
  return "a user-defined operation";
}

// A seqlock reader: copies `src` (8-byte words, the writer's relaxed stores)
// when no write overlapped the copy; false after `tries` overlapping tries.
template <class T>
bool seqlock_copy(const std::uint64_t& lock_ref, const T& src, T& out, int tries,
                  std::uint64_t* lock_value = nullptr) noexcept {
  static_assert(sizeof(T) % 8 == 0 && std::is_trivially_copyable_v<T>);
  constexpr std::size_t kWords = sizeof(T) / 8;
  auto* lock = const_cast<std::uint64_t*>(&lock_ref);
  for (int t = 0; t < tries; ++t) {
    const std::uint64_t s1 = __atomic_load_n(lock, __ATOMIC_ACQUIRE);
    if (s1 & 1) continue;
    const auto* words = reinterpret_cast<const std::uint64_t*>(&src);
    std::uint64_t buf[kWords];
    for (std::size_t i = 0; i < kWords; ++i)
      buf[i] = __atomic_load_n(const_cast<std::uint64_t*>(words + i), __ATOMIC_RELAXED);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (__atomic_load_n(lock, __ATOMIC_RELAXED) != s1) continue;
    std::memcpy(&out, buf, sizeof out);
    if (lock_value) *lock_value = s1;
    return true;
  }
  return false;
}

bool record_read(const RankRecord& r, RecordLive& out, std::uint64_t* lock_value, int tries) noexcept {
  return seqlock_copy(r.lock, r.live, out, tries, lock_value);
}

std::size_t ring_read(const RankRecord& r, std::uint64_t from, std::uint64_t to,
                      CollEvent* out) noexcept {
  // The bounds come from a record the job's user writes: count, never compare
  // against `to` (to == UINT64_MAX would wrap and loop forever).
  if (to >= kRingSize && from < to - kRingSize + 1) from = to - kRingSize + 1;
  if (from == 0) from = 1;
  if (from > to) return 0;
  const std::uint64_t span = std::min<std::uint64_t>(to - from, kRingSize - 1) + 1;
  std::size_t n = 0;
  for (std::uint64_t i = 0; i < span; ++i) {
    const std::uint64_t k = from + i;
    const RingSlot& s = r.ring[k % kRingSize];
    auto* sm = const_cast<RingSlot*>(&s);
    if (__atomic_load_n(&sm->tag, __ATOMIC_ACQUIRE) != k) continue;
    CollEvent e{k, __atomic_load_n(&sm->fingerprint, __ATOMIC_RELAXED),
                __atomic_load_n(const_cast<std::uint64_t*>(&r.ring_kind[k % kRingSize]), __ATOMIC_RELAXED),
                __atomic_load_n(&sm->entry_ns, __ATOMIC_RELAXED),
                __atomic_load_n(&sm->exit_ns, __ATOMIC_ACQUIRE),
                __atomic_load_n(const_cast<std::uint64_t*>(&r.ring_comm[k % kRingSize]), __ATOMIC_RELAXED)};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (__atomic_load_n(&sm->tag, __ATOMIC_RELAXED) != k) continue;
    out[n++] = e;
  }
  return n;
}

std::size_t outsig_read(const RankRecord& r, std::uint64_t from, OutSig* out, std::uint64_t* next) noexcept {
  auto* rm = const_cast<RankRecord*>(&r);
  const std::uint64_t count = __atomic_load_n(&rm->outsig_count, __ATOMIC_ACQUIRE);
  if (next) *next = count;
  if (count == UINT64_MAX || from >= count) return 0;  // nothing new, or a count that cannot be
  if (count > kOutSigRing && from < count - kOutSigRing) from = count - kOutSigRing;
  const std::uint64_t span = std::min<std::uint64_t>(count - from, kOutSigRing);
  std::size_t n = 0;
  for (std::uint64_t i = 0; i < span; ++i) {
    const std::uint64_t k = from + i;
    OutSig* s = &rm->outsigs[k % kOutSigRing];
    if (__atomic_load_n(&s->tag, __ATOMIC_ACQUIRE) != k + 1) continue;
    OutSig o{k + 1, __atomic_load_n(&s->comm, __ATOMIC_RELAXED), __atomic_load_n(&s->call, __ATOMIC_RELAXED),
             __atomic_load_n(&s->kind, __ATOMIC_RELAXED), __atomic_load_n(&s->sig, __ATOMIC_RELAXED),
             __atomic_load_n(&s->bytes, __ATOMIC_RELAXED)};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (__atomic_load_n(&s->tag, __ATOMIC_RELAXED) != k + 1) continue;
    out[n++] = o;
  }
  return n;
}

std::string comm_entry_check(const CommEntry& e, std::size_t index) {
  if (e.stored > kCommMembers)
    return format_c("communicator %zu stores %u members; at most %zu fit", index, e.stored, kCommMembers);
  if (e.stored > e.size)
    return format_c("communicator %zu stores %u members of a size-%u communicator", index, e.stored, e.size);
  for (std::uint32_t m = 0; m < e.stored; ++m)
    if (e.members[m] < 0) return format_c("communicator %zu lists member %d", index, e.members[m]);
  return {};
}

std::string record_check_live(const RecordLive& l) {
  if (l.in_collective > 1) return format_c("in_collective is %llu; expected 0 or 1", (unsigned long long)l.in_collective);
  if (l.state > (kStateInitialized | kStateFinalized))
    return format_c("state is %llu; expected 0-3", (unsigned long long)l.state);
  if ((l.kind & 0xff) >= kCollKindCount || (l.kind & ~std::uint64_t{0x1ff}) != 0)
    return format_c("collective kind %#llx is not one scout knows", (unsigned long long)l.kind);
  if (l.seq > kMaxSeq) return format_c("sequence number %llu is out of range", (unsigned long long)l.seq);
  return {};
}


std::string record_check_header(const RankRecord& r, std::size_t mapped_bytes) {
  if (mapped_bytes < sizeof(RankRecord))
    return format_c("record is %zu bytes; expected at least %zu", mapped_bytes, sizeof(RankRecord));
  if (r.magic != kRecordMagic)
    return format_c("bad magic %#018llx; expected %#018llx (not a scout rank record)",
                    static_cast<unsigned long long>(r.magic), static_cast<unsigned long long>(kRecordMagic));
  const std::size_t want = record_size_of(r.version);
  if (want == 0)
    return format_c("record version %u; expected version %u, %u, %u, %u, %u or %u", r.version, kRecordVersionOld,
                    kRecordVersion, kRecordVersionGpu, kRecordVersionMt, kRecordVersionDirs, kRecordVersionTags);
  if (r.size != want) return format_c("record size field %u; expected %zu for version %u", r.size, want, r.version);
  if (mapped_bytes < want)
    return format_c("record is %zu bytes; expected at least %zu for version %u", mapped_bytes, want, r.version);
  if (r.world_rank < 0 || r.world_size <= 0 || r.world_rank >= r.world_size)
    return format_c("rank %d of %d is out of range", r.world_rank, r.world_size);
  return {};
}

std::size_t record_size_of(std::uint32_t version) noexcept {
  switch (version) {
    case SCOUT_RECORD_VERSION_5: return sizeof(RankRecord);
    case SCOUT_RECORD_VERSION_6: return sizeof(RecordV6);
    case SCOUT_RECORD_VERSION_7: return sizeof(RecordV7);
    case SCOUT_RECORD_VERSION_8: return sizeof(RecordV8);
    case SCOUT_RECORD_VERSION_9: return sizeof(RecordV9);
    case SCOUT_RECORD_VERSION_10: return sizeof(RecordV10);
    default: return 0;
  }
}

bool gpu_read(const RecordV7& r, GpuLive& out, int tries) noexcept {
  return seqlock_copy(r.gpu_lock, r.gpu, out, tries);
}

std::string gpu_check_live(const GpuLive& g, std::uint64_t issued) {
  if (g.tracking > 1) return "gpu.tracking is neither 0 nor 1";
  if (g.done > g.started) return format_c("the GPU completed %llu operations but started only %llu",
                                          (unsigned long long)g.done, (unsigned long long)g.started);
  // The completion thread may publish before the host's live part shows the
  // issue: allow the operations one update can carry.
  if (g.started > issued + 4096 || g.started > kMaxSeq)
    return format_c("the GPU started %llu operations; the host issued %llu", (unsigned long long)g.started,
                    (unsigned long long)issued);
  return {};
}

std::string comm_ops_read(const RecordV7& r, std::vector<CommOps>& out) {
  out.clear();
  std::uint64_t n = __atomic_load_n(const_cast<std::uint64_t*>(&r.comm_ops_count), __ATOMIC_ACQUIRE);
  if (n > kCommOps) return format_c("%llu communicators in the progress table; at most %zu fit", (unsigned long long)n, kCommOps);
  for (std::uint64_t i = 0; i < n; ++i) {
    auto* s = const_cast<CommOps*>(&r.comm_ops[i]);
    CommOps c;
    c.id = __atomic_load_n(&s->id, __ATOMIC_RELAXED);
    // Read in the order the writers advance them: done, then begun, then issued.
    c.done = __atomic_load_n(&s->done, __ATOMIC_ACQUIRE);
    c.begun = __atomic_load_n(&s->begun, __ATOMIC_ACQUIRE);
    c.issued = __atomic_load_n(&s->issued, __ATOMIC_ACQUIRE);
    if (c.done > c.begun || c.begun > c.issued + 4096 || c.issued > kMaxSeq)
      return format_c("communicator %llu: %llu issued, %llu begun, %llu done is not a possible progress",
                      (unsigned long long)i, (unsigned long long)c.issued, (unsigned long long)c.begun,
                      (unsigned long long)c.done);
    out.push_back(c);
  }
  return {};
}

std::string comm_progress_read(const RecordV8& r, std::vector<CommProgress>& out, std::size_t* busy) {
  out.clear();
  if (busy) *busy = 0;
  const std::uint64_t n = __atomic_load_n(const_cast<std::uint64_t*>(&r.comm_progress_count), __ATOMIC_ACQUIRE);
  if (n > kProgressComms)
    return format_c("%llu communicators in the progress table; at most %zu fit", (unsigned long long)n, kProgressComms);
  for (std::uint64_t i = 0; i < n; ++i) {
    CommProgress c;
    if (!seqlock_copy(r.comm_progress[i].lock, r.comm_progress[i], c, 100)) {
      if (busy) ++*busy;
      continue;
    }
    if (c.completed > c.entered || c.entered > kMaxSeq)
      return format_c("communicator %llu: %llu collectives entered and %llu completed is not a possible progress",
                      (unsigned long long)i, (unsigned long long)c.entered, (unsigned long long)c.completed);
    if ((c.kind & 0xff) >= kCollKindCount || (c.kind & ~std::uint64_t{0x1ff}) != 0)
      return format_c("communicator %llu: collective kind %#llx is not one scout knows", (unsigned long long)i,
                      (unsigned long long)c.kind);
    if (c.id == 0) return format_c("communicator %llu has no identity", (unsigned long long)i);
    out.push_back(c);
  }
  return {};
}

std::string threads_read(const RecordV8& r, std::int32_t world_size, std::vector<ThreadSlot>& out, std::size_t* busy) {
  out.clear();
  if (busy) *busy = 0;
  for (std::size_t i = 0; i < kThreadSlots; ++i) {
    if (__atomic_load_n(const_cast<std::uint64_t*>(&r.threads[i].tid), __ATOMIC_ACQUIRE) == 0) continue;
    ThreadSlot t;
    if (!seqlock_copy(r.threads[i].lock, r.threads[i], t, 100)) {
      if (busy) ++*busy;
      continue;
    }
    if (t.tid > 0x7fffffff) return format_c("thread slot %zu: thread id %llu is out of range", i, (unsigned long long)t.tid);
    if ((t.coll_kind & 0xff) >= kCollKindCount || (t.coll_kind & ~std::uint64_t{0x1ff}) != 0)
      return format_c("thread slot %zu: collective kind %#llx is not one scout knows", i, (unsigned long long)t.coll_kind);
    if (t.coll_ordinal > kMaxSeq) return format_c("thread slot %zu: collective ordinal out of range", i);
    if (std::string why = p2p_check_live(t.p2p, world_size); !why.empty())
      return format_c("thread slot %zu: %s", i, why.c_str());
    out.push_back(t);
  }
  return {};
}

const char* p2p_call_name(std::uint64_t call) noexcept {
  static const char* const kNames[SCOUT_P2P_CALL_COUNT] = {
      "", "MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Recv", "MPI_Sendrecv",
      "MPI_Sendrecv_replace", "MPI_Probe", "MPI_Mprobe", "MPI_Mrecv", "MPI_Wait", "MPI_Waitall",
      "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome", "MPI_Iprobe",
      "ncclSend", "ncclRecv"};
  return call < SCOUT_P2P_CALL_COUNT ? kNames[call] : "unknown";
}

bool dirs_read(const RecordV9& r, P2PDirs& out, int tries) noexcept {
  return seqlock_copy(r.dirs_lock, r.dirs, out, tries);
}

std::string dirs_check(const P2PDirs& d, std::uint64_t npeers) {
  const std::uint64_t n = npeers < kBlockedPeers ? npeers : kBlockedPeers;
  const std::uint64_t all = n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
  if ((d.recv_mask | d.send_mask) & ~all)
    return format_c("dirs names peer slots beyond the %llu listed (receive mask %#llx, send mask %#llx)",
                    static_cast<unsigned long long>(n), static_cast<unsigned long long>(d.recv_mask),
                    static_cast<unsigned long long>(d.send_mask));
  return {};
}

bool tags_read(const RecordV10& r, P2PTags& out, int tries) noexcept {
  return seqlock_copy(r.tags_lock, r.tags, out, tries);
}

std::string tags_check(const P2PTags& t, const P2PDirs& d, std::uint64_t npeers) {
  const std::uint64_t n = npeers < kBlockedPeers ? npeers : kBlockedPeers;
  for (std::uint64_t i = 0; i < kBlockedPeers; ++i)
    for (int way = 0; way < 2; ++way) {
      const std::int64_t tag = way == 0 ? t.recv_tag[i] : t.send_tag[i];
      const bool awaited = i < n && (((way == 0 ? d.recv_mask : d.send_mask) >> i) & 1);
      const char* what = way == 0 ? "receive tag" : "send tag";
      if (!awaited && tag != kTagNone)
        return format_c("tags: %s %lld for peer slot %llu, which dirs says awaits no %s; expected %lld there", what,
                        static_cast<long long>(tag), static_cast<unsigned long long>(i), way == 0 ? "receive" : "send",
                        static_cast<long long>(kTagNone));
      if (awaited && (tag < kTagSeveral || tag > 0x7fffffff))
        return format_c("tags: %s %lld for peer slot %llu; expected an MPI tag (0 to 2147483647), or %lld for several",
                        what, static_cast<long long>(tag), static_cast<unsigned long long>(i),
                        static_cast<long long>(kTagSeveral));
    }
  return {};
}

bool p2p_read(const RecordV6& r, P2PLive& out, int tries) noexcept {
  return seqlock_copy(r.p2p_lock, r.p2p, out, tries);
}

std::string p2p_check_live(const P2PLive& l, std::int32_t world_size) {
  if (l.call >= SCOUT_P2P_CALL_COUNT) return format_c("point-to-point call %llu is not one scout knows", (unsigned long long)l.call);
  if (l.npeers > kBlockedPeers)
    return format_c("lists %llu awaited peers; at most %zu fit", (unsigned long long)l.npeers, kBlockedPeers);
  for (std::uint64_t i = 0; i < l.npeers; ++i)
    if (l.peers[i] != kPeerAny && (l.peers[i] < 0 || l.peers[i] >= world_size))
      return format_c("awaited peer %lld is not a rank of this %d-rank job", (long long)l.peers[i], world_size);
  if (l.more_peers > 1) return "more_peers is neither 0 nor 1";
  if (l.ops > kMaxSeq) return format_c("message count %llu is out of range", (unsigned long long)l.ops);
  return {};
}

bool end_read(const RecordV6& r, EndEvent& out, std::string* why) noexcept {
  auto* e = const_cast<EndEvent*>(&r.end);
  const std::uint64_t tag = __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE);
  if (tag == 0) return false;
  out.tag = tag;
  out.kind = __atomic_load_n(&e->kind, __ATOMIC_RELAXED);
  out.code = __atomic_load_n(&e->code, __ATOMIC_RELAXED);
  out.addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
  out.ns = __atomic_load_n(&e->ns, __ATOMIC_RELAXED);
  out.comm_id = __atomic_load_n(&e->comm_id, __ATOMIC_RELAXED);
  out.seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
  out.p2p_call = __atomic_load_n(&e->p2p_call, __ATOMIC_RELAXED);
  if ((out.kind != SCOUT_END_ABORT && out.kind != SCOUT_END_SIGNAL && out.kind != SCOUT_END_EXIT) ||
      tag != out.kind) {
    if (why) *why = "end event of an unknown kind (expected an abort, a signal or an exit)";
    return false;
  }
  if (out.kind == SCOUT_END_EXIT && (out.code < 0 || out.code > 255 || out.addr != 0)) {
    if (why) *why = "exit end event: expected an exit status 0-255 and no address";
    return false;
  }
  if (out.kind == SCOUT_END_SIGNAL && (out.code <= 0 || out.code > 64)) {
    if (why) *why = "end event names a signal outside 1-64";
    return false;
  }
  if (out.kind == SCOUT_END_ABORT && out.addr != 0 &&
      ((out.addr & SCOUT_END_MPI_ERROR) == 0 || (out.addr & ~SCOUT_END_MPI_ERROR) > kMpiErrorClassCount ||
       out.code <= 0 || out.code > 1'000'000)) {
    if (why) *why = "MPI error end event: expected an error class 1-1000000 and a standard class index";
    return false;
  }
  if (out.seq > kMaxSeq || out.p2p_call >= SCOUT_P2P_CALL_COUNT) {
    if (why) *why = "end event out of range";
    return false;
  }
  return true;
}

std::string record_shm_prefix(const std::string& job, const std::string& step) {
  return "scout." + job + "." + (step.empty() ? std::string() : step + ".");
}

std::string record_shm_name(const std::string& job, const std::string& step, int rank) {
  return "/" + record_shm_prefix(job, step) + std::to_string(rank);
}

}  // namespace scout::c3
