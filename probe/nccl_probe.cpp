// libscout_nccl.so: the NCCL probe, preloaded into training processes that
// use NCCL (PyTorch, TorchTitan, Megatron-Core, DeepSpeed). It wraps the NCCL
// API (forwarding with dlsym(RTLD_NEXT), so the program's NCCL does the
// work), publishes every operation the host issues into the rank's record
// (version 7: live part as the MPI probe writes it, plus the GPU part), and
// tracks completion on the GPU without synchronising: a CUDA event before
// and after each operation (or group), through the driver API loaded with
// dlopen("libcuda.so.1") (no CUDA runtime is linked into the job), polled
// by one probe thread with cuEventQuery. scoutd then tells a host that
// stopped issuing from a GPU that stopped executing.
//
// Rank identity: RANK (torchrun), OMPI_COMM_WORLD_RANK, PMIX_RANK or
// SLURM_PROCID, and WORLD_SIZE, OMPI_COMM_WORLD_SIZE or SLURM_NTASKS; without
// them, the rank and size of the first communicator. A statically linked
// NCCL is invisible to an interposer: the probe says so at exit when the
// process mapped no libnccl.so but issued nothing through it.
#include <nccl.h>
#include <cuda.h>

#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "libc3/rank_record.hpp"
#include "libc3/signature.hpp"
#include "probe/fatal_signals.hpp"
#include "probe/record_shm.hpp"

#define SCOUT_STR2(x) #x
#define SCOUT_STR(x) SCOUT_STR2(x)  // expands cuda.h's versioned names (cuEventDestroy_v2)
#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using namespace scout;

std::uint64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

// --- The driver, loaded on first use ----------------------------------------
struct Driver {
  bool ok = false;
  CUresult (*event_create)(CUevent*, unsigned) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_query)(CUevent) = nullptr;
  CUresult (*event_elapsed)(float*, CUevent, CUevent) = nullptr;
  CUresult (*stream_capturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*stream_ctx)(CUstream, CUcontext*) = nullptr;
  CUresult (*ctx_current)(CUcontext*) = nullptr;
  CUresult (*ctx_set)(CUcontext) = nullptr;
  CUresult (*ctx_device)(CUdevice*) = nullptr;
  CUresult (*bus_id)(char*, int, CUdevice) = nullptr;
};
Driver g_cu;

template <class F>
bool load(void* h, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(h, name));
  return f != nullptr;
}

void driver_load() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  g_cu.ok = load(h, g_cu.event_create, SCOUT_STR(cuEventCreate)) &&
            load(h, g_cu.event_record, SCOUT_STR(cuEventRecord)) &&
            load(h, g_cu.event_query, SCOUT_STR(cuEventQuery)) &&
            load(h, g_cu.event_elapsed, SCOUT_STR(cuEventElapsedTime)) &&
            load(h, g_cu.stream_capturing, SCOUT_STR(cuStreamIsCapturing)) &&
            load(h, g_cu.stream_ctx, SCOUT_STR(cuStreamGetCtx)) &&
            load(h, g_cu.ctx_current, SCOUT_STR(cuCtxGetCurrent)) &&
            load(h, g_cu.ctx_set, SCOUT_STR(cuCtxSetCurrent)) &&
            load(h, g_cu.ctx_device, SCOUT_STR(cuCtxGetDevice)) &&
            load(h, g_cu.bus_id, SCOUT_STR(cuDeviceGetPCIBusId));
}

// --- Forwarding to the program's NCCL ---------------------------------------
template <class F>
F next(F& cache, const char* name) {
  F f = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
  if (!f) {
    f = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
    __atomic_store_n(&cache, f, __ATOMIC_RELEASE);
  }
  return f;
}
#define NEXT(name, ...)                               \
  using name##_fn = __VA_ARGS__;                      \
  static name##_fn cache_##name = nullptr;            \
  name##_fn real = next(cache_##name, #name);         \
  if (!real) return ncclSystemError;

// NCCL calls parts of its own API through the PLT (ncclBcast ->
// ncclBroadcast): only the outermost call of a thread counts.
thread_local int t_depth = 0;
struct Depth {
  bool outer;
  Depth() noexcept : outer(t_depth++ == 0) {}
  ~Depth() { --t_depth; }
};

// --- The record -------------------------------------------------------------
c3::RankRecord* g_rec = nullptr;
char g_shm_name[128];
pthread_once_t g_once = PTHREAD_ONCE_INIT;
bool g_disabled = false;
std::uint64_t g_seq = 0, g_last_exit = 0, g_outside = 0;
int g_lock = 0;  // issue order: host threads may issue concurrently
void lock() noexcept {
  while (__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE)) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
}
void unlock() noexcept { __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE); }

int env_int(const char* const* names, int fallback) {
  for (const char* const* n = names; *n; ++n)
    if (const char* v = std::getenv(*n); v && *v) {
      char* end = nullptr;
      long x = std::strtol(v, &end, 10);
      if (*end == 0 && x >= 0 && x < (1 << 24)) return static_cast<int>(x);
    }
  return fallback;
}

void on_fatal(int sig, siginfo_t* info) noexcept;

void open_record(int comm_rank, int comm_size) {
  const char* job = nullptr;
  const char* step = nullptr;
  if (!probe::record_env("scout-nccl", &job, &step)) {
    g_disabled = true;
    return;
  }
  driver_load();
  static const char* const kRank[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", nullptr};
  static const char* const kSize[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", nullptr};
  int rank = env_int(kRank, -1), size = env_int(kSize, -1);
  if (rank < 0 || size <= rank) {
    rank = comm_rank;
    size = comm_size;
  }
  c3::RankRecord* r = probe::record_create("scout-nccl", job, step, rank, size, c3::kRecordVersionGpu,
                                           sizeof(c3::RecordV7), g_shm_name, sizeof g_shm_name);
  if (!r) {
    g_disabled = true;
    return;
  }
  c3::RecordV7& v7 = c3::v7_of(*r);
  v7.source = SCOUT_SOURCE_NCCL;
  v7.cuda_device = -1;
  CUdevice dev = 0;
  if (g_cu.ok && g_cu.ctx_device(&dev) == CUDA_SUCCESS) {
    v7.cuda_device = dev;
    if (g_cu.bus_id(v7.gpu_bus_id, sizeof v7.gpu_bus_id, dev) != CUDA_SUCCESS) v7.gpu_bus_id[0] = 0;
  }
  g_last_exit = now_ns();
  probe::record_publish(*r);
  __atomic_store_n(&g_rec, r, __ATOMIC_RELEASE);
  probe::install_fatal_chain(on_fatal);
}

// --- Fatal signals -----------------------------------------------------------
// The signal that ended the rank, written into the record's end event before
// the previous handler (or the default action) runs: scoutd names the first
// rank that failed even when the launcher kills the others a moment later.
// Async-signal-safe: atomic stores into the mapped record, sigaction, raise.
void on_fatal(int sig, siginfo_t* info) noexcept {
  c3::RankRecord* r = __atomic_load_n(&g_rec, __ATOMIC_ACQUIRE);
  if (!r) return;
  c3::EndEvent& e = c3::v6_of(*r).end;
  if (__atomic_load_n(&e.tag, __ATOMIC_ACQUIRE) != 0) return;  // the first event stays
  __atomic_store_n(&e.kind, std::uint64_t{SCOUT_END_SIGNAL}, __ATOMIC_RELAXED);
  __atomic_store_n(&e.code, std::int64_t{sig}, __ATOMIC_RELAXED);
  __atomic_store_n(&e.addr, info && sig != SIGABRT ? reinterpret_cast<std::uintptr_t>(info->si_addr) : 0,
                   __ATOMIC_RELAXED);
  __atomic_store_n(&e.ns, now_ns(), __ATOMIC_RELAXED);
  __atomic_store_n(&e.seq, __atomic_load_n(&r->live.seq, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  __atomic_store_n(&e.tag, std::uint64_t{SCOUT_END_SIGNAL}, __ATOMIC_RELEASE);
}

// --- Communicators ----------------------------------------------------------
struct Comm {
  ncclComm_t handle;
  std::uint64_t id;
  int rank, size;
  std::uint64_t splits;
  int ops_slot;       // its row in the record's per-communicator table (-1: none)
  std::uint64_t cseq; // operations issued on it
};
constexpr int kComms = 256;
Comm g_comms[kComms];

// Under g_lock.
void publish_world_comm(c3::RankRecord& r, std::uint64_t id, int size) {
  const std::uint64_t k = __atomic_load_n(&r.comm_count, __ATOMIC_RELAXED);
  if (k >= c3::kCommTable) return;
  for (std::uint64_t i = 0; i < k; ++i)
    if (r.comms[i].id == id) return;
  c3::CommEntry& e = r.comms[k];
  e.id = id;
  e.size = static_cast<std::uint32_t>(size);
  e.stored = static_cast<std::uint32_t>(size < static_cast<int>(c3::kCommMembers) ? size : c3::kCommMembers);
  for (std::uint32_t i = 0; i < e.stored; ++i) e.members[i] = static_cast<std::int32_t>(i);
  __atomic_store_n(&r.comm_count, k + 1, __ATOMIC_RELEASE);
}

Comm* comm_find(ncclComm_t c) noexcept {
  for (auto& e : g_comms)
    if (e.handle == c) return &e;
  return nullptr;
}
void comm_add(ncclComm_t c, std::uint64_t id, int rank, int size) {
  pthread_once(&g_once, [] {});
  if (!g_rec && !g_disabled) open_record(rank, size);
  lock();  // held to the end: two threads creating communicators at once must not take the same row
  c3::RankRecord* r = g_rec;
  int slot = -1;
  std::uint64_t issued = 0;
  if (r) {
    // Its progress row (append-only; the id is there before the count covers it).
    c3::RecordV7& v7 = c3::v7_of(*r);
    const std::uint64_t k = __atomic_load_n(&v7.comm_ops_count, __ATOMIC_RELAXED);
    for (std::uint64_t i = 0; i < k && slot < 0; ++i)
      if (v7.comm_ops[i].id == id) slot = static_cast<int>(i);
    if (slot >= 0) {
      // The same communicator again (re-created from the same id): its count
      // goes on from the row's, which readers require never to go back.
      issued = __atomic_load_n(&v7.comm_ops[slot].issued, __ATOMIC_RELAXED);
    } else if (k < c3::kCommOps) {
      __atomic_store_n(&v7.comm_ops[k].id, id, __ATOMIC_RELAXED);
      __atomic_store_n(&v7.comm_ops_count, k + 1, __ATOMIC_RELEASE);
      slot = static_cast<int>(k);
    }
  }
  for (auto& e : g_comms)
    if (!e.handle) {
      e = {c, id, rank, size, 0, slot, issued};
      break;
    }
  // A communicator over the whole job: its members are the world ranks
  // (NCCL does not say which process a comm rank is; other sizes are not
  // published).
  if (r && size == r->world_size) publish_world_comm(*r, id, size);
  unlock();
}
void comm_forget(ncclComm_t c) {
  lock();
  if (Comm* e = comm_find(c)) *e = Comm{};
  unlock();
}
std::uint64_t id_of_unique(const ncclUniqueId& u) {
  return c3::signature(u.internal, sizeof u.internal, {.element_type = 98u});
}

// --- Completion tracking ----------------------------------------------------
// A FIFO of issued operations with their two events, filled by the host
// (under g_lock) and drained by the completion thread. Each slot owns its
// events for good (created once), so the hot path never creates one.
constexpr std::uint64_t kOps = 1024;
struct OpSlot {
  CUevent start = nullptr, end = nullptr;
  std::uint64_t seq, fp, kind, comm;
  int ops_slot;        // the communicator's progress row (-1 none)
  std::uint64_t cseq;  // its number on that communicator
  std::int64_t peer;  // send/recv: the peer's world rank (-1 unknown)
  bool ended;  // end event recorded (a group records it at its End)
};
OpSlot g_ops[kOps];
std::uint64_t g_head = 0;                 // next slot the host fills
std::atomic<std::uint64_t> g_tail{0};     // next slot the poller looks at
std::atomic<std::uint64_t> g_ended{0};    // slots [.., g_ended) have their end event
bool g_events_ok = false;
sem_t g_wake;  // the host wakes the completion thread when half the FIFO is in use
bool g_thread_started = false;
CUcontext g_ctx = nullptr;
std::uint64_t g_captured = 0, g_untracked = 0;

// Operations inside a group: their end events wait for the outermost End.
thread_local int t_group = 0;
struct GroupOp {
  std::uint64_t slot;
  CUstream stream;
};
constexpr int kGroupOps = 256;
thread_local GroupOp t_group_ops[kGroupOps];
thread_local int t_group_n = 0;

std::uint64_t poll_interval_ns() {
  static const std::uint64_t v = [] {
    const char* e = std::getenv("SCOUT_NCCL_POLL_US");
    long us = e ? std::strtol(e, nullptr, 10) : 5000;
    if (us < 50 || us > 1000000) us = 5000;
    return static_cast<std::uint64_t>(us) * 1000;
  }();
  return v;
}

void publish_gpu(c3::RecordV7& v7, const c3::GpuLive& g) {
  c3::seqlock_write_begin(v7.gpu_lock);
  const auto* src = reinterpret_cast<const std::uint64_t*>(&g);
  auto* dst = reinterpret_cast<std::uint64_t*>(&v7.gpu);
  for (std::size_t i = 0; i < sizeof g / 8; ++i) __atomic_store_n(dst + i, src[i], __ATOMIC_RELAXED);
  c3::seqlock_write_end(v7.gpu_lock);
}

// The point-to-point part from the GPU's view: while the GPU is inside an
// ncclSend/ncclRecv, that call and its peer (the wait-for graph reads it);
// `ops` counts the sends and receives the GPU completed.
void publish_p2p(c3::RecordV6& v6, std::uint64_t call, std::int64_t peer, std::uint64_t comm, std::uint64_t since,
                 std::uint64_t ops) {
  c3::p2p_write_begin(v6);
  c3::rec_store(v6.p2p.ops, ops);
  c3::rec_store(v6.p2p.call, call);
  c3::rec_store(v6.p2p.entry_ns, since);
  c3::rec_store(v6.p2p.comm_id, comm);
  c3::rec_store(v6.p2p.tag, std::int64_t{-1});
  c3::rec_store(v6.p2p.npeers, std::uint64_t{call != 0 && peer >= 0 ? 1u : 0u});
  c3::rec_store(v6.p2p.peers[0], peer);
  c3::rec_store(v6.p2p.more_peers, std::uint64_t{0});
  c3::rec_store(v6.p2p.any_comm, std::uint64_t{0});
  c3::p2p_write_end(v6);
}

void* poller(void*) {
  if (g_ctx) g_cu.ctx_set(g_ctx);
  c3::RankRecord* r = g_rec;
  c3::RecordV7& v7 = c3::v7_of(*r);
  c3::GpuLive g{};
  g.tracking = 1;
  CUevent prev_end = nullptr;
  std::uint64_t t_gpu = 0;  // the GPU timeline, chained through elapsed times
  c3::RecordV6& v6 = c3::v6_of(*r);
  std::uint64_t p2p_ops = 0, p2p_call = 0, p2p_seq = 0, p2p_since = 0;
  // Every interval while operations are outstanding; ten times slower (a
  // heartbeat) while the GPU has nothing of ours to finish.
  const timespec busy{static_cast<time_t>(poll_interval_ns() / 1000000000ULL),
                      static_cast<long>(poll_interval_ns() % 1000000000ULL)};
  const std::uint64_t idle_ns = poll_interval_ns() * 10;
  const timespec idle{static_cast<time_t>(idle_ns / 1000000000ULL), static_cast<long>(idle_ns % 1000000000ULL)};
  for (;;) {
    std::uint64_t tail = g_tail.load(std::memory_order_relaxed);
    const std::uint64_t ended = g_ended.load(std::memory_order_acquire);
    bool changed = false;
    std::uint64_t inside_call = 0, inside_seq = 0, inside_comm = 0;
    std::int64_t inside_peer = -1;
    while (tail < ended) {
      OpSlot& o = g_ops[tail % kOps];
      if (g.started < o.seq) {
        CUresult q = g_cu.event_query(o.start);
        if (q == CUDA_ERROR_NOT_READY) break;
        if (q != CUDA_SUCCESS) g.error = static_cast<std::uint64_t>(q);
        float gap = 0;
        if (prev_end && g_cu.event_elapsed(&gap, prev_end, o.start) == CUDA_SUCCESS && gap > 0) {
          t_gpu += static_cast<std::uint64_t>(static_cast<double>(gap) * 1e6);
          g.gpu_outside_ns += static_cast<std::uint64_t>(static_cast<double>(gap) * 1e6);
        } else if (!prev_end) {
          t_gpu = now_ns();
        }
        g.started = o.seq;
        if (o.ops_slot >= 0) __atomic_store_n(&v7.comm_ops[o.ops_slot].begun, o.cseq, __ATOMIC_RELEASE);
        c3::ring_enter(*r, o.seq, o.fp, o.kind, o.comm, t_gpu);
        changed = true;
      }
      CUresult q = g_cu.event_query(o.end);
      if (q == CUDA_ERROR_NOT_READY) {
        if (o.kind == c3::kSend || o.kind == c3::kRecv) {
          inside_call = o.kind == c3::kSend ? SCOUT_P2P_NCCL_SEND : SCOUT_P2P_NCCL_RECV;
          inside_seq = o.seq;
          inside_peer = o.peer;
          inside_comm = o.comm;
        }
        break;
      }
      if (o.kind == c3::kSend || o.kind == c3::kRecv) ++p2p_ops;
      if (q != CUDA_SUCCESS) g.error = static_cast<std::uint64_t>(q);
      float inside = 0;
      if (g_cu.event_elapsed(&inside, o.start, o.end) == CUDA_SUCCESS && inside > 0) {
        t_gpu += static_cast<std::uint64_t>(static_cast<double>(inside) * 1e6);
        g.gpu_inside_ns += static_cast<std::uint64_t>(static_cast<double>(inside) * 1e6);
      }
      c3::ring_exit(*r, o.seq, t_gpu);
      if (o.ops_slot >= 0) __atomic_store_n(&v7.comm_ops[o.ops_slot].done, o.cseq, __ATOMIC_RELEASE);
      g.done = o.seq;
      g.done_ns = now_ns();
      prev_end = o.end;
      g_tail.store(++tail, std::memory_order_release);
      changed = true;
    }
    if (inside_call != p2p_call || inside_seq != p2p_seq || changed) {
      if (inside_call != 0 && inside_seq != p2p_seq) p2p_since = now_ns();
      p2p_call = inside_call;
      p2p_seq = inside_seq;
      publish_p2p(v6, p2p_call, inside_peer, inside_comm, p2p_call ? p2p_since : 0, p2p_ops);
    }
    g.poll_ns = now_ns();
    g.captured = __atomic_load_n(&g_captured, __ATOMIC_RELAXED);
    g.untracked = __atomic_load_n(&g_untracked, __ATOMIC_RELAXED);
    (void)changed;
    publish_gpu(v7, g);
    const timespec& d = tail < g_ended.load(std::memory_order_acquire) || tail < __atomic_load_n(&g_head, __ATOMIC_RELAXED)
                            ? busy
                            : idle;
    timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += d.tv_sec;
    until.tv_nsec += d.tv_nsec;
    if (until.tv_nsec >= 1000000000L) until.tv_sec += 1, until.tv_nsec -= 1000000000L;
    while (sem_clockwait(&g_wake, CLOCK_MONOTONIC, &until) != 0 && errno == EINTR) {
    }
  }
  return nullptr;
}

bool events_ready(CUstream stream) {
  if (g_events_ok) return true;
  if (!g_cu.ok) return false;
  CUcontext ctx = nullptr;
  if (g_cu.stream_ctx(stream, &ctx) != CUDA_SUCCESS || !ctx) {
    if (g_cu.ctx_current(&ctx) != CUDA_SUCCESS || !ctx) return false;
  }
  for (auto& o : g_ops)
    if (g_cu.event_create(&o.start, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
        g_cu.event_create(&o.end, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
      return false;
  g_ctx = ctx;
  g_events_ok = true;
  return true;
}

void start_poller() {
  if (g_thread_started) return;
  g_thread_started = true;
  sem_init(&g_wake, 0, 0);
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  // The poller must not keep the process alive nor take signals meant for it.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  if (pthread_create(&t, &a, poller, nullptr) == 0) pthread_setname_np(t, "scout-nccl-poll");
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&a);
}

// Before an operation is handed to NCCL: numbered, published, start event.
// Returns the FIFO slot + 1 (0: untracked).
std::uint64_t op_begin(std::uint32_t kind, ncclComm_t comm, std::size_t count, ncclDataType_t dt, std::uint64_t op,
                       std::int64_t root_or_peer, cudaStream_t s) noexcept {
  c3::RankRecord* r = __atomic_load_n(&g_rec, __ATOMIC_ACQUIRE);
  if (!r) return 0;
  auto stream = reinterpret_cast<CUstream>(s);
  const std::uint64_t t = now_ns();
  lock();
  Comm* cm = comm_find(comm);
  const std::uint64_t cid = cm ? cm->id : 0;
  const int ops_slot = cm ? cm->ops_slot : -1;
  const std::uint64_t cseq = cm ? ++cm->cseq : 0;
  if (ops_slot >= 0) __atomic_store_n(&c3::v7_of(*r).comm_ops[ops_slot].issued, cseq, __ATOMIC_RELEASE);
  const std::uint64_t fp = probe::fingerprint_of(kind, cid, count, static_cast<std::uint64_t>(dt) + 1, op,
                                                 static_cast<std::uint64_t>(root_or_peer));
  const std::uint64_t seq = ++g_seq;
  g_outside += t - g_last_exit;
  g_last_exit = t;
  c3::record_write_begin(*r);
  c3::rec_store(r->live.seq, seq);
  c3::rec_store(r->live.fingerprint, fp);
  c3::rec_store(r->live.comm_id, cid);
  c3::rec_store(r->live.kind, std::uint64_t{kind});
  c3::rec_store(r->live.count, static_cast<std::int64_t>(count));
  c3::rec_store(r->live.datatype, static_cast<std::uint64_t>(dt) + 1);
  c3::rec_store(r->live.op, op);
  c3::rec_store(r->live.root, root_or_peer);
  c3::rec_store(r->live.entry_ns, t);
  c3::rec_store(r->live.exit_ns, t);
  c3::rec_store(r->live.outside_ns, g_outside);
  c3::record_write_end(*r);
  std::uint64_t slot = 0;
  CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!events_ready(stream)) {
    ++g_untracked;
  } else if (g_cu.stream_capturing(stream, &cap) == CUDA_SUCCESS && cap != CU_STREAM_CAPTURE_STATUS_NONE) {
    ++g_captured;  // replayed later by the graph: no event to wait for
  } else if (g_head - g_tail.load(std::memory_order_acquire) >= kOps - 1) {
    ++g_untracked;  // the GPU is far behind: counted, not tracked
  } else {
    OpSlot& o = g_ops[g_head % kOps];
    o.seq = seq;
    o.fp = fp;
    o.kind = kind;
    o.comm = cid;
    o.ops_slot = ops_slot;
    o.cseq = cseq;
    o.peer = -1;
    if (kind == c3::kSend || kind == c3::kRecv) {
      // A comm rank is a world rank on a communicator over the whole job.
      Comm* c = comm_find(comm);
      if (c && c->size == r->world_size && root_or_peer >= 0 && root_or_peer < c->size) o.peer = root_or_peer;
    }
    o.ended = false;
    if (g_cu.event_record(o.start, stream) == CUDA_SUCCESS) slot = ++g_head;  // slot index + 1
    else ++g_untracked;
    start_poller();
    // Half the FIFO in use: the completion thread retires now rather than at
    // its next poll (one post per crossing, so rarely a system call).
    if (g_head - g_tail.load(std::memory_order_relaxed) == kOps / 2) sem_post(&g_wake);
  }
  unlock();
  return slot;
}

// After NCCL accepted it (or, in a group, at the outermost End): end event.
void op_end(std::uint64_t slot, cudaStream_t s) noexcept {
  if (!slot) return;
  lock();
  OpSlot& o = g_ops[(slot - 1) % kOps];
  if (g_cu.event_record(o.end, reinterpret_cast<CUstream>(s)) != CUDA_SUCCESS) ++g_untracked;
  o.ended = true;
  // The poller reads slots in order: publish the prefix that has its end.
  std::uint64_t e = g_ended.load(std::memory_order_relaxed);
  while (e < g_head && g_ops[e % kOps].ended) ++e;
  g_ended.store(e, std::memory_order_release);
  unlock();
}

// Wraps one operation: counted once (outermost call), grouped or not.
template <class F>
ncclResult_t wrap_op(std::uint32_t kind, ncclComm_t comm, std::size_t count, ncclDataType_t dt, std::uint64_t op,
                     std::int64_t root, cudaStream_t s, F call) {
  Depth d;
  if (!d.outer || !g_rec) return call();
  const std::uint64_t slot = op_begin(kind, comm, count, dt, op, root, s);
  const ncclResult_t rc = call();
  if (t_group > 0) {
    if (slot && t_group_n < kGroupOps) t_group_ops[t_group_n++] = {slot, s};
    else op_end(slot, s);  // too many in one group: ends at once
  } else {
    op_end(slot, s);
  }
  return rc;
}

// The kinds scout records (the MPI probe's numbering).
constexpr std::uint32_t kAllReduce = c3::kAllreduce, kBroadcast = c3::kBcast, kReduce = c3::kReduce,
                        kAllGather = c3::kAllgather, kReduceScatter = c3::kReduceScatterBlock,
                        kAllToAll = c3::kAlltoall, kGather = c3::kGather, kScatter = c3::kScatter;
// Send and receive are recorded as operations too: NCCL orders them on the
// stream like collectives (kind codes past the MPI collectives).
constexpr std::uint32_t kSend = c3::kSend, kRecv = c3::kRecv;

}  // namespace

// --- The wrapped API ----------------------------------------------------------
EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  NEXT(ncclCommInitRank, ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int))
  Depth d;
  ncclResult_t rc = real(comm, nranks, id, rank);
  if (rc == ncclSuccess && d.outer && comm) comm_add(*comm, id_of_unique(id), rank, nranks);
  return rc;
}
EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t* config) {
  NEXT(ncclCommInitRankConfig, ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*))
  Depth d;
  ncclResult_t rc = real(comm, nranks, id, rank, config);
  if ((rc == ncclSuccess || rc == ncclInProgress) && d.outer && comm) comm_add(*comm, id_of_unique(id), rank, nranks);
  return rc;
}
EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  NEXT(ncclCommInitAll, ncclResult_t (*)(ncclComm_t*, int, const int*))
  Depth d;
  ncclResult_t rc = real(comms, ndev, devlist);
  // Several GPUs in one process: one record cannot tell them apart; the
  // communicators are known (identity from the process and order) so their
  // operations are counted, against the first device.
  if (rc == ncclSuccess && d.outer && comms)
    for (int i = 0; i < ndev; ++i) {
      std::uint64_t w[2] = {static_cast<std::uint64_t>(getpid()), static_cast<std::uint64_t>(i)};
      comm_add(comms[i], c3::signature_words(w), i, ndev);
    }
  return rc;
}
EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  NEXT(ncclCommSplit, ncclResult_t (*)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))
  Depth d;
  ncclResult_t rc = real(comm, color, key, newcomm, config);
  if ((rc == ncclSuccess || rc == ncclInProgress) && d.outer && newcomm && *newcomm) {
    // Identity: the parent, the color and the how-many-th split of the
    // parent this is (every member splits in the same order).
    lock();
    Comm* p = comm_find(comm);
    std::uint64_t w[3] = {p ? p->id : 0, static_cast<std::uint64_t>(static_cast<std::uint32_t>(color)),
                          p ? ++p->splits : 0};
    unlock();
    int n = 0, r = 0;
    static ncclResult_t (*count)(const ncclComm_t, int*) = nullptr;
    static ncclResult_t (*user_rank)(const ncclComm_t, int*) = nullptr;
    if (next(count, "ncclCommCount")) count(*newcomm, &n);
    if (next(user_rank, "ncclCommUserRank")) user_rank(*newcomm, &r);
    comm_add(*newcomm, c3::signature_words(w), r, n);
  }
  return rc;
}
EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  NEXT(ncclCommFinalize, ncclResult_t (*)(ncclComm_t))
  return real(comm);
}
EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  NEXT(ncclCommDestroy, ncclResult_t (*)(ncclComm_t))
  comm_forget(comm);
  return real(comm);
}
EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  NEXT(ncclCommAbort, ncclResult_t (*)(ncclComm_t))
  comm_forget(comm);
  return real(comm);
}

EXPORT ncclResult_t ncclAllReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                                  cudaStream_t st) {
  NEXT(ncclAllReduce, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
  return wrap_op(kAllReduce, c, n, t, static_cast<std::uint64_t>(op) + 1, -1, st, [&] { return real(s, r, n, t, op, c, st); });
}
EXPORT ncclResult_t ncclBroadcast(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                                  cudaStream_t st) {
  NEXT(ncclBroadcast, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kBroadcast, c, n, t, 0, root, st, [&] { return real(s, r, n, t, root, c, st); });
}
EXPORT ncclResult_t ncclBcast(void* b, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st) {
  NEXT(ncclBcast, ncclResult_t (*)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kBroadcast, c, n, t, 0, root, st, [&] { return real(b, n, t, root, c, st); });
}
EXPORT ncclResult_t ncclReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root,
                               ncclComm_t c, cudaStream_t st) {
  NEXT(ncclReduce, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kReduce, c, n, t, static_cast<std::uint64_t>(op) + 1, root, st,
                 [&] { return real(s, r, n, t, op, root, c, st); });
}
EXPORT ncclResult_t ncclAllGather(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) {
  NEXT(ncclAllGather, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
  return wrap_op(kAllGather, c, n, t, 0, -1, st, [&] { return real(s, r, n, t, c, st); });
}
EXPORT ncclResult_t ncclReduceScatter(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                                      ncclComm_t c, cudaStream_t st) {
  NEXT(ncclReduceScatter, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
  return wrap_op(kReduceScatter, c, n, t, static_cast<std::uint64_t>(op) + 1, -1, st,
                 [&] { return real(s, r, n, t, op, c, st); });
}
EXPORT ncclResult_t ncclAlltoAll(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) {
  NEXT(ncclAlltoAll, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
  return wrap_op(kAllToAll, c, n, t, 0, -1, st, [&] { return real(s, r, n, t, c, st); });
}
EXPORT ncclResult_t ncclGather(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                               cudaStream_t st) {
  NEXT(ncclGather, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kGather, c, n, t, 0, root, st, [&] { return real(s, r, n, t, root, c, st); });
}
EXPORT ncclResult_t ncclScatter(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                                cudaStream_t st) {
  NEXT(ncclScatter, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kScatter, c, n, t, 0, root, st, [&] { return real(s, r, n, t, root, c, st); });
}
EXPORT ncclResult_t ncclSend(const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
  NEXT(ncclSend, ncclResult_t (*)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kSend, c, n, t, 0, peer, st, [&] { return real(s, n, t, peer, c, st); });
}
EXPORT ncclResult_t ncclRecv(void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
  NEXT(ncclRecv, ncclResult_t (*)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kRecv, c, n, t, 0, peer, st, [&] { return real(r, n, t, peer, c, st); });
}
EXPORT ncclResult_t ncclGroupStart() {
  NEXT(ncclGroupStart, ncclResult_t (*)())
  Depth d;
  ncclResult_t rc = real();
  if (d.outer && rc == ncclSuccess) ++t_group;
  return rc;
}
EXPORT ncclResult_t ncclGroupEnd() {
  NEXT(ncclGroupEnd, ncclResult_t (*)())
  Depth d;
  ncclResult_t rc = real();
  if (d.outer && t_group > 0 && --t_group == 0) {
    // The group's operations were launched now: their end events follow.
    for (int i = 0; i < t_group_n; ++i) op_end(t_group_ops[i].slot, t_group_ops[i].stream);
    t_group_n = 0;
  }
  return rc;
}

__attribute__((destructor)) static void scout_nccl_fini() {
  c3::RankRecord* r = __atomic_exchange_n(&g_rec, nullptr, __ATOMIC_ACQ_REL);
  // The completion thread may still read the mapping: leave it mapped, mark
  // the rank finalised and remove the name.
  if (!r) return;
  c3::record_write_begin(*r);
  c3::rec_store(r->live.state, std::uint64_t{c3::kStateInitialized | c3::kStateFinalized});
  c3::record_write_end(*r);
  shm_unlink(g_shm_name);
}
