// Stand-in for libnccl.so.2, for tests on machines without a GPU (NCCL
// refuses to run without one). Nothing installed depends on it. Same soname
// and the symbols scout wraps, each a weak ncclX aliasing a strong pncclX as
// in real NCCL, and ncclBcast calls ncclBroadcast through the PLT as real
// NCCL does (a probe must not count it twice). Collectives and sends really
// move data between the ranks' host buffers through a POSIX shm segment
// named in the unique id, and run on the stand-in driver's streams
// (scout_standin_enqueue), so they are asynchronous to the host and complete
// in stream order, like kernels. A rank whose stream is held leaves its
// peers waiting inside the operation, as on a GPU. Limits: at most 16 ranks,
// 4 MiB per rank and operation, 256 KiB per message in flight.
#include <nccl.h>
#include <cuda.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

extern "C" void scout_standin_enqueue(CUstream s, void (*fn)(void*), void* arg);

namespace {

constexpr std::uint64_t kIdMagic = 0x4E49445354414E44ULL;  // "DNATSDIN"
constexpr int kMaxRanks = 16;
constexpr std::size_t kSlot = 4u << 20;
constexpr std::size_t kChan = 256u << 10;

// The segment: a POSIX shm name, or with SCOUT_STANDIN_NCCL_DIR (ranks on
// "nodes" with private /dev/shm, on one host) a file in that directory.
struct IdBody {
  std::uint64_t magic;
  char shm[112];
};
static_assert(sizeof(IdBody) <= NCCL_UNIQUE_ID_BYTES);

struct Chan {
  std::atomic<std::uint64_t> posted, taken;
  std::uint64_t bytes;
  char data[kChan];
};
struct Shared {
  std::atomic<std::uint64_t> arrived;  // barrier arrivals, ever
  std::atomic<std::uint64_t> aborted;
  char pad[48];
  std::uint64_t sig[kMaxRanks];  // each rank's current operation, compared at its first barrier
  std::atomic<std::uint64_t> host_arrived;  // host-side collectives (init, split): their own barrier
  int split_color[kMaxRanks], split_key[kMaxRanks];
  char slot[kMaxRanks][kSlot];
  Chan chan[kMaxRanks][kMaxRanks];  // [src][dst]
};

thread_local const char* t_last_error = "";
thread_local int t_group = 0;

}  // namespace

struct ncclComm {
  Shared* sh = nullptr;
  char name[112];
  int nranks = 0, rank = 0, device = 0;
  std::uint64_t barriers = 0;  // this rank's barriers so far (stream order)
  std::uint64_t host_barriers = 0, splits = 0;
  bool creator = false;
};

namespace {

std::size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

ncclResult_t fail(ncclResult_t r, const char* why) {
  t_last_error = why;
  return r;
}

// Waits for all ranks; false when the communicator was aborted.
bool barrier(ncclComm* c) {
  const std::uint64_t target = static_cast<std::uint64_t>(c->nranks) * ++c->barriers;
  c->sh->arrived.fetch_add(1);
  int spins = 0;
  while (c->sh->arrived.load() < target) {
    if (c->sh->aborted.load()) return false;
    if (++spins > 100) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

// The host-side barrier (communicator creation), apart from the streams'.
bool host_barrier(ncclComm* c) {
  const std::uint64_t target = static_cast<std::uint64_t>(c->nranks) * ++c->host_barriers;
  c->sh->host_arrived.fetch_add(1);
  while (c->sh->host_arrived.load() < target) {
    if (c->sh->aborted.load()) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

ncclResult_t open_comm(const char* name, int nranks, int rank, ncclComm_t* comm);

template <class T>
void reduce_into(T* out, const T* in, std::size_t n, ncclRedOp_t op) {
  for (std::size_t i = 0; i < n; ++i) {
    switch (op) {
      case ncclSum: case ncclAvg: out[i] = static_cast<T>(out[i] + in[i]); break;
      case ncclProd: out[i] = static_cast<T>(out[i] * in[i]); break;
      case ncclMax: out[i] = out[i] < in[i] ? in[i] : out[i]; break;
      case ncclMin: out[i] = in[i] < out[i] ? in[i] : out[i]; break;
      default: break;
    }
  }
}
template <class T>
void divide(T* out, std::size_t n, int by) {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(out[i] / by);
}

void reduce_dispatch(void* out, const void* in, std::size_t n, ncclDataType_t t, ncclRedOp_t op) {
  switch (t) {
    case ncclInt8: reduce_into(static_cast<std::int8_t*>(out), static_cast<const std::int8_t*>(in), n, op); break;
    case ncclUint8: reduce_into(static_cast<std::uint8_t*>(out), static_cast<const std::uint8_t*>(in), n, op); break;
    case ncclInt32: reduce_into(static_cast<std::int32_t*>(out), static_cast<const std::int32_t*>(in), n, op); break;
    case ncclUint32: reduce_into(static_cast<std::uint32_t*>(out), static_cast<const std::uint32_t*>(in), n, op); break;
    case ncclInt64: reduce_into(static_cast<std::int64_t*>(out), static_cast<const std::int64_t*>(in), n, op); break;
    case ncclUint64: reduce_into(static_cast<std::uint64_t*>(out), static_cast<const std::uint64_t*>(in), n, op); break;
    case ncclFloat32: reduce_into(static_cast<float*>(out), static_cast<const float*>(in), n, op); break;
    case ncclFloat64: reduce_into(static_cast<double*>(out), static_cast<const double*>(in), n, op); break;
    default: break;
  }
}
void avg_dispatch(void* out, std::size_t n, ncclDataType_t t, int by) {
  if (t == ncclFloat32) divide(static_cast<float*>(out), n, by);
  else if (t == ncclFloat64) divide(static_cast<double*>(out), n, by);
}

enum class Kind { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllToAll, kSend, kRecv };
struct Op {
  Kind kind;
  const void* send;
  void* recv;
  std::size_t count;
  ncclDataType_t type;
  ncclRedOp_t red;
  int root;  // or peer
  ncclComm* comm;
  CUstream stream;
};

// Ranks that call different collectives (kind, count, type, op, root) at
// the same point hang, as they do on NCCL: every rank sees the mismatch.
bool same_op(ncclComm* c, std::uint64_t sig) {
  for (int r = 0; r < c->nranks; ++r)
    if (__atomic_load_n(&c->sh->sig[r], __ATOMIC_ACQUIRE) != sig) return false;
  return true;
}
void hang_until_abort(ncclComm* c) {
  while (!c->sh->aborted.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void run_op(void* arg) {
  Op* o = static_cast<Op*>(arg);
  ncclComm* c = o->comm;
  const std::size_t es = type_size(o->type);
  const std::size_t bytes = o->count * es;
  char* mine = c->sh->slot[c->rank];
  const std::uint64_t sig = (static_cast<std::uint64_t>(o->kind) << 56) ^ (o->count << 16) ^
                            (static_cast<std::uint64_t>(o->type) << 8) ^ (static_cast<std::uint64_t>(o->red) << 4) ^
                            static_cast<std::uint64_t>(o->root) * 0x9E3779B97F4A7C15ULL;
  if (o->kind != Kind::kSend && o->kind != Kind::kRecv) {
    __atomic_store_n(&c->sh->sig[c->rank], sig, __ATOMIC_RELEASE);
  }
  switch (o->kind) {
    case Kind::kSend: {
      Chan& ch = c->sh->chan[c->rank][o->root];
      while (ch.posted.load() != ch.taken.load()) {
        if (c->sh->aborted.load()) break;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      std::memcpy(ch.data, o->send, bytes);
      ch.bytes = bytes;
      ch.posted.fetch_add(1);
      break;
    }
    case Kind::kRecv: {
      Chan& ch = c->sh->chan[o->root][c->rank];
      while (ch.posted.load() == ch.taken.load()) {
        if (c->sh->aborted.load()) break;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      std::memcpy(o->recv, ch.data, std::min(bytes, static_cast<std::size_t>(ch.bytes)));
      ch.taken.fetch_add(1);
      break;
    }
    case Kind::kAllReduce:
    case Kind::kReduce:
    case Kind::kReduceScatter: {
      std::memcpy(mine, o->send, o->kind == Kind::kReduceScatter ? bytes * c->nranks : bytes);
      if (!barrier(c)) break;
      if (!same_op(c, sig)) { hang_until_abort(c); break; }
      std::vector<char> acc(bytes);
      const std::size_t off = o->kind == Kind::kReduceScatter ? bytes * c->rank : 0;
      std::memcpy(acc.data(), c->sh->slot[0] + off, bytes);
      for (int r = 1; r < c->nranks; ++r) reduce_dispatch(acc.data(), c->sh->slot[r] + off, o->count, o->type, o->red);
      if (o->red == ncclAvg) avg_dispatch(acc.data(), o->count, o->type, c->nranks);
      if (o->kind != Kind::kReduce || c->rank == o->root) std::memcpy(o->recv, acc.data(), bytes);
      barrier(c);
      break;
    }
    case Kind::kBroadcast: {
      if (c->rank == o->root) std::memcpy(mine, o->send, bytes);
      if (!barrier(c)) break;
      if (!same_op(c, sig)) { hang_until_abort(c); break; }
      std::memmove(o->recv, c->sh->slot[o->root], bytes);
      barrier(c);
      break;
    }
    case Kind::kAllGather: {
      std::memcpy(mine, o->send, bytes);
      if (!barrier(c)) break;
      if (!same_op(c, sig)) { hang_until_abort(c); break; }
      for (int r = 0; r < c->nranks; ++r) std::memcpy(static_cast<char*>(o->recv) + bytes * r, c->sh->slot[r], bytes);
      barrier(c);
      break;
    }
    case Kind::kAllToAll: {
      std::memcpy(mine, o->send, bytes * c->nranks);
      if (!barrier(c)) break;
      if (!same_op(c, sig)) { hang_until_abort(c); break; }
      for (int r = 0; r < c->nranks; ++r)
        std::memcpy(static_cast<char*>(o->recv) + bytes * r, c->sh->slot[r] + bytes * c->rank, bytes);
      barrier(c);
      break;
    }
  }
  delete o;
}

void unlink_segment(const char* name) {
  if (std::strchr(name + 1, '/')) ::unlink(name);
  else shm_unlink(name);
}

thread_local std::vector<Op*> t_pending;  // inside a group: issued at the outermost End

ncclResult_t issue(Kind k, const void* send, void* recv, std::size_t count, ncclDataType_t t, ncclRedOp_t red,
                   int root, ncclComm_t comm, cudaStream_t stream) {
  if (!comm) return fail(ncclInvalidArgument, "stand-in: null communicator");
  const std::size_t es = type_size(t);
  if (es == 0) return fail(ncclInvalidArgument, "stand-in: unsupported data type");
  const std::size_t per = (k == Kind::kReduceScatter || k == Kind::kAllToAll) ? count * comm->nranks : count;
  if (per * es > kSlot || ((k == Kind::kSend || k == Kind::kRecv) && count * es > kChan))
    return fail(ncclInvalidArgument, "stand-in: operation larger than its buffers");
  if ((k == Kind::kSend || k == Kind::kRecv || k == Kind::kBroadcast || k == Kind::kReduce) &&
      (root < 0 || root >= comm->nranks))
    return fail(ncclInvalidArgument, "stand-in: root or peer out of range");
  auto* o = new Op{k, send, recv, count, t, red, root, comm, reinterpret_cast<CUstream>(stream)};
  if (t_group > 0) t_pending.push_back(o);
  else scout_standin_enqueue(o->stream, run_op, o);
  return ncclSuccess;
}

}  // namespace

#define EXPORT extern "C" __attribute__((visibility("default")))
#define WEAK(ret, name, params) EXPORT ret name params __attribute__((weak, alias("p" #name)));

EXPORT ncclResult_t pncclGetVersion(int* v) {
  if (!v) return ncclInvalidArgument;
  *v = 22809;
  return ncclSuccess;
}
EXPORT const char* pncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclSystemError: return "unhandled system error";
    default: return "stand-in error";
  }
}
EXPORT const char* pncclGetLastError(ncclComm_t) { return t_last_error; }
EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return ncclInvalidArgument;
  std::memset(id, 0, sizeof *id);
  IdBody b{};
  b.magic = kIdMagic;
  std::random_device rd;
  const char* dir = std::getenv("SCOUT_STANDIN_NCCL_DIR");
  if (dir && *dir)
    std::snprintf(b.shm, sizeof b.shm, "%s/scoutstandin.%d.%08x", dir, static_cast<int>(getpid()), rd());
  else
    std::snprintf(b.shm, sizeof b.shm, "/scoutstandin.%d.%08x", static_cast<int>(getpid()), rd());
  std::memcpy(id->internal, &b, sizeof b);
  return ncclSuccess;
}
namespace {
ncclResult_t open_comm(const char* name, int nranks, int rank, ncclComm_t* comm) {
  const bool file = name[0] == '/' && std::strchr(name + 1, '/') != nullptr;
  int fd = file ? ::open(name, O_CREAT | O_RDWR, 0600) : shm_open(name, O_CREAT | O_RDWR, 0600);
  if (fd < 0) return fail(ncclSystemError, "stand-in: shm_open failed");
  if (ftruncate(fd, sizeof(Shared)) != 0) {
    close(fd);
    return fail(ncclSystemError, "stand-in: ftruncate failed");
  }
  void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return fail(ncclSystemError, "stand-in: mmap failed");
  auto* c = new ncclComm;
  c->sh = static_cast<Shared*>(p);
  std::snprintf(c->name, sizeof c->name, "%s", name);
  c->nranks = nranks;
  c->rank = rank;
  CUcontext ctx = nullptr;
  CUdevice dev = 0;
  if (cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx && cuCtxGetDevice(&dev) == CUDA_SUCCESS) c->device = dev;
  // Like ncclCommInitRank, a collective over the new communicator.
  if (!host_barrier(c)) return fail(ncclSystemError, "stand-in: aborted during init");
  *comm = c;
  return ncclSuccess;
}
}  // namespace

EXPORT ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (!comm || nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "stand-in: bad nranks/rank (at most 16 ranks)");
  IdBody b;
  std::memcpy(&b, id.internal, sizeof b);
  if (b.magic != kIdMagic) return fail(ncclInvalidArgument, "stand-in: not a stand-in unique id");
  b.shm[sizeof b.shm - 1] = 0;
  return open_comm(b.shm, nranks, rank, comm);
}
EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                            ncclConfig_t*) {
  return pncclCommInitRank(comm, nranks, id, rank);
}
EXPORT ncclResult_t pncclCommInitAll(ncclComm_t*, int, const int*) {
  return fail(ncclInvalidUsage, "stand-in: ncclCommInitAll (several GPUs in one process) is not simulated");
}
// A collective over the parent: every rank publishes its color and key, and
// each color's ranks, ordered by (key, parent rank), open a segment named
// after the parent, the split's ordinal and the color.
EXPORT ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t*) {
  if (!comm || !newcomm) return ncclInvalidArgument;
  comm->sh->split_color[comm->rank] = color;
  comm->sh->split_key[comm->rank] = key;
  if (!host_barrier(comm)) return fail(ncclSystemError, "stand-in: aborted during split");
  int n = 0, me = 0;
  for (int r = 0; r < comm->nranks; ++r) {
    if (comm->sh->split_color[r] != color) continue;
    const int k = comm->sh->split_key[r];
    if (k < key || (k == key && r < comm->rank)) ++me;
    ++n;
  }
  const std::uint64_t split = ++comm->splits;
  if (!host_barrier(comm)) return fail(ncclSystemError, "stand-in: aborted during split");  // colors read
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  char name[112];
  if (std::snprintf(name, sizeof name, "%s.%llu.%d", comm->name, static_cast<unsigned long long>(split), color) >=
      static_cast<int>(sizeof name))
    return fail(ncclInvalidUsage, "stand-in: split segment name too long");
  return open_comm(name, n, me, newcomm);
}
EXPORT ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  return ncclSuccess;
}
EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  if (comm->rank == 0) unlink_segment(comm->name);
  munmap(comm->sh, sizeof(Shared));
  delete comm;
  return ncclSuccess;
}
EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  comm->sh->aborted.store(1);
  unlink_segment(comm->name);
  return ncclSuccess;
}
EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* err) {
  if (!comm || !err) return ncclInvalidArgument;
  *err = comm->sh->aborted.load() ? ncclSystemError : ncclSuccess;
  return ncclSuccess;
}
EXPORT ncclResult_t pncclCommCount(const ncclComm_t comm, int* n) {
  if (!comm || !n) return ncclInvalidArgument;
  *n = comm->nranks;
  return ncclSuccess;
}
EXPORT ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* r) {
  if (!comm || !r) return ncclInvalidArgument;
  *r = comm->rank;
  return ncclSuccess;
}
EXPORT ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* d) {
  if (!comm || !d) return ncclInvalidArgument;
  *d = comm->device;
  return ncclSuccess;
}
EXPORT ncclResult_t pncclAllReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                                   cudaStream_t st) {
  return issue(Kind::kAllReduce, s, r, n, t, op, 0, c, st);
}
EXPORT ncclResult_t pncclBroadcast(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                                   cudaStream_t st) {
  return issue(Kind::kBroadcast, s, r, n, t, ncclSum, root, c, st);
}
EXPORT ncclResult_t ncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)
    __attribute__((weak, alias("pncclBroadcast")));
EXPORT ncclResult_t pncclBcast(void* b, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st) {
  return ncclBroadcast(b, b, n, t, root, c, st);  // through the PLT, as real NCCL does
}
EXPORT ncclResult_t pncclReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root,
                                ncclComm_t c, cudaStream_t st) {
  return issue(Kind::kReduce, s, r, n, t, op, root, c, st);
}
EXPORT ncclResult_t pncclAllGather(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c,
                                   cudaStream_t st) {
  return issue(Kind::kAllGather, s, r, n, t, ncclSum, 0, c, st);
}
EXPORT ncclResult_t pncclReduceScatter(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                                       ncclComm_t c, cudaStream_t st) {
  return issue(Kind::kReduceScatter, s, r, n, t, op, 0, c, st);
}
EXPORT ncclResult_t pncclAlltoAll(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c,
                                  cudaStream_t st) {
  return issue(Kind::kAllToAll, s, r, n, t, ncclSum, 0, c, st);
}
EXPORT ncclResult_t pncclSend(const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
  return issue(Kind::kSend, s, nullptr, n, t, ncclSum, peer, c, st);
}
EXPORT ncclResult_t pncclRecv(void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
  return issue(Kind::kRecv, nullptr, r, n, t, ncclSum, peer, c, st);
}
EXPORT ncclResult_t pncclGroupStart() {
  ++t_group;
  return ncclSuccess;
}
EXPORT ncclResult_t pncclGroupEnd() {
  if (t_group == 0) return fail(ncclInvalidUsage, "stand-in: ncclGroupEnd without ncclGroupStart");
  if (--t_group > 0) return ncclSuccess;
  for (Op* o : t_pending) scout_standin_enqueue(o->stream, run_op, o);
  t_pending.clear();
  return ncclSuccess;
}

WEAK(ncclResult_t, ncclGetVersion, (int*))
WEAK(const char*, ncclGetErrorString, (ncclResult_t))
WEAK(const char*, ncclGetLastError, (ncclComm_t))
WEAK(ncclResult_t, ncclGetUniqueId, (ncclUniqueId*))
WEAK(ncclResult_t, ncclCommInitRank, (ncclComm_t*, int, ncclUniqueId, int))
WEAK(ncclResult_t, ncclCommInitRankConfig, (ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*))
WEAK(ncclResult_t, ncclCommInitAll, (ncclComm_t*, int, const int*))
WEAK(ncclResult_t, ncclCommSplit, (ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))
WEAK(ncclResult_t, ncclCommFinalize, (ncclComm_t))
WEAK(ncclResult_t, ncclCommDestroy, (ncclComm_t))
WEAK(ncclResult_t, ncclCommAbort, (ncclComm_t))
WEAK(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t, ncclResult_t*))
WEAK(ncclResult_t, ncclCommCount, (const ncclComm_t, int*))
WEAK(ncclResult_t, ncclCommUserRank, (const ncclComm_t, int*))
WEAK(ncclResult_t, ncclCommCuDevice, (const ncclComm_t, int*))
WEAK(ncclResult_t, ncclAllReduce, (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
WEAK(ncclResult_t, ncclBcast, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
WEAK(ncclResult_t, ncclReduce, (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t))
WEAK(ncclResult_t, ncclAllGather, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
WEAK(ncclResult_t, ncclReduceScatter, (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
WEAK(ncclResult_t, ncclAlltoAll, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
WEAK(ncclResult_t, ncclSend, (const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
WEAK(ncclResult_t, ncclRecv, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
WEAK(ncclResult_t, ncclGroupStart, ())
WEAK(ncclResult_t, ncclGroupEnd, ())
