// The NCCL probe's parts (internal to probe/, see nccl_probe.cpp): the
// state shared by its record and communicator bookkeeping (nccl_probe.cpp),
// its completion tracking (nccl_ops.cpp) and the wrapped NCCL API
// (nccl_wrappers.cpp). Built with -fvisibility=hidden: nothing here is
// exported but the NCCL functions marked EXPORT.
#pragma once

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

namespace scout::nccl_probe {

using namespace scout;

std::uint64_t now_ns() noexcept;

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
extern Driver g_cu;
void driver_load();

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
extern thread_local int t_depth;
struct Depth {
  bool outer;
  Depth() noexcept : outer(t_depth++ == 0) {}
  ~Depth() { --t_depth; }
};

// --- The record -------------------------------------------------------------
extern c3::RankRecord* g_rec;
extern char g_shm_name[128];
extern pthread_once_t g_once;
extern bool g_disabled;
extern std::uint64_t g_seq, g_last_exit, g_outside;
extern int g_lock;  // issue order: host threads may issue concurrently
inline void lock() noexcept {
  while (__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE)) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
}
inline void unlock() noexcept { __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE); }
void open_record(int comm_rank, int comm_size);
void on_fatal(int sig, siginfo_t* info) noexcept;

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
extern Comm g_comms[kComms];
Comm* comm_find(ncclComm_t c) noexcept;
void comm_add(ncclComm_t c, std::uint64_t id, int rank, int size);
void comm_forget(ncclComm_t c);
std::uint64_t id_of_unique(const ncclUniqueId& u);

// --- Completion tracking (nccl_ops.cpp) ---------------------------------------
constexpr std::uint64_t kOps = 1024;
struct OpSlot {
  CUevent start = nullptr, end = nullptr;
  std::uint64_t seq, fp, kind, comm;
  int ops_slot;        // the communicator's progress row (-1 none)
  std::uint64_t cseq;  // its number on that communicator
  std::int64_t peer;  // send/recv: the peer's world rank (-1 unknown)
  bool ended;  // end event recorded (a group records it at its End)
};
extern OpSlot g_ops[kOps];
extern std::uint64_t g_head;
extern std::atomic<std::uint64_t> g_tail, g_ended;
extern bool g_events_ok, g_thread_started;
extern sem_t g_wake;
extern CUcontext g_ctx;
extern std::uint64_t g_captured, g_untracked;
// Operations inside a group: their end events wait for the outermost End.
extern thread_local int t_group;
struct GroupOp {
  std::uint64_t slot;
  CUstream stream;
};
constexpr int kGroupOps = 256;
extern thread_local GroupOp t_group_ops[kGroupOps];
extern thread_local int t_group_n;
void start_poller();
std::uint64_t op_begin(std::uint32_t kind, ncclComm_t comm, std::size_t count, ncclDataType_t dt, std::uint64_t op,
                       std::int64_t root_or_peer, cudaStream_t s) noexcept;
void op_end(std::uint64_t slot, cudaStream_t s) noexcept;

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

}  // namespace scout::nccl_probe
