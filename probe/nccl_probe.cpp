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
#include <unistd.h>

#include "probe/nccl_probe.hpp"

namespace scout::nccl_probe {

using namespace scout;

std::uint64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

// --- The driver, loaded on first use ----------------------------------------
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

thread_local int t_depth = 0;

// --- The record -------------------------------------------------------------
c3::RankRecord* g_rec = nullptr;
char g_shm_name[128];
pthread_once_t g_once = PTHREAD_ONCE_INIT;
bool g_disabled = false;
std::uint64_t g_seq = 0, g_last_exit = 0, g_outside = 0;
int g_lock = 0;  // issue order: host threads may issue concurrently

int env_int(const char* const* names, int fallback) {
  for (const char* const* n = names; *n; ++n)
    if (const char* v = std::getenv(*n); v && *v) {
      char* end = nullptr;
      long x = std::strtol(v, &end, 10);
      if (*end == 0 && x >= 0 && x < (1 << 24)) return static_cast<int>(x);
    }
  return fallback;
}


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
  // Only the rank itself: a DataLoader or other child it forked shares the
  // mapping and the handlers, and its fault is not the rank's.
  if (r->pid != static_cast<std::int32_t>(getpid())) return;
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

}  // namespace scout::nccl_probe
