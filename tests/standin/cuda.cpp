// Stand-in for libcuda.so.1 (the CUDA driver), for tests on machines without
// a GPU. Nothing installed depends on it. It implements the driver calls
// scout's NCCL probe and examples/nccl_train make, with the semantics they
// rely on: a stream is a FIFO of work run by its own thread (the "GPU"), so
// work is asynchronous to the host; an event completes when the stream
// reaches it, with the time it did; cuStreamWaitValue32 holds a stream until
// a word in host memory reaches a value (how nccl_train simulates a hung or
// slow GPU, on the stand-in and on a real GPU alike); device memory is host
// memory. The stand-in NCCL (nccl.cpp) runs its collectives on these streams
// through scout_standin_enqueue. Devices: SCOUT_STANDIN_GPUS (default 8),
// PCI bus ids 0000:1X:00.0.
#include <cuda.h>

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace {

std::uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

struct Ctx {
  int device = 0;
};
Ctx g_ctx[64];
thread_local CUcontext t_current = nullptr;
std::atomic<bool> g_init{false};

int device_count() {
  const char* v = std::getenv("SCOUT_STANDIN_GPUS");
  int n = v ? std::atoi(v) : 8;
  return n < 0 ? 0 : n > 64 ? 64 : n;
}

}  // namespace

struct CUstream_st {
  std::mutex mu;
  std::condition_variable cv, idle;
  std::deque<std::function<void()>> work;
  bool busy = false, stop = false;
  Ctx* ctx = nullptr;
  std::thread worker;
  void run() {
    std::unique_lock lk(mu);
    for (;;) {
      cv.wait(lk, [&] { return stop || !work.empty(); });
      if (work.empty()) return;
      auto fn = std::move(work.front());
      work.pop_front();
      busy = true;
      lk.unlock();
      fn();
      lk.lock();
      busy = false;
      if (work.empty()) idle.notify_all();
    }
  }
  void push(std::function<void()> fn) {
    {
      std::lock_guard lk(mu);
      work.push_back(std::move(fn));
    }
    cv.notify_one();
  }
  void sync() {
    std::unique_lock lk(mu);
    idle.wait(lk, [&] { return work.empty() && !busy; });
  }
};

struct CUevent_st {
  std::atomic<std::uint64_t> recorded{0}, reached{0};  // generations
  std::atomic<std::uint64_t> ns{0};
  unsigned flags = 0;
};

namespace {
CUstream_st* g_default = nullptr;
std::mutex g_default_mu;
CUstream_st* stream_of(CUstream s) {
  if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) return s;
  std::lock_guard lk(g_default_mu);
  if (!g_default) {
    g_default = new CUstream_st;
    g_default->ctx = &g_ctx[0];
    g_default->worker = std::thread([] { g_default->run(); });
    g_default->worker.detach();
  }
  return g_default;
}
}  // namespace

extern "C" {

// For the stand-in NCCL: run fn(arg) on the stream, in order with its work.
__attribute__((visibility("default"))) void scout_standin_enqueue(CUstream s, void (*fn)(void*), void* arg) {
  stream_of(s)->push([fn, arg] { fn(arg); });
}

CUresult CUDAAPI cuInit(unsigned int) {
  g_init = true;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDriverGetVersion(int* v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int* n) {
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = device_count();
  return *n ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}
CUresult CUDAAPI cuDeviceGet(CUdevice* d, int ordinal) {
  if (!d || ordinal < 0 || ordinal >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice d) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<std::size_t>(len), "scout stand-in GPU %d", d);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetPCIBusId(char* bus, int len, CUdevice d) {
  if (!bus || len <= 0 || d < 0 || d >= device_count()) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(bus, static_cast<std::size_t>(len), "0000:%02x:00.0", 0x10 + d);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) {
  if (!c || d < 0 || d >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  g_ctx[d].device = d;
  *c = reinterpret_cast<CUcontext>(&g_ctx[d]);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxSetCurrent(CUcontext c) {
  t_current = c;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* c) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  *c = t_current;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice* d) {
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (!t_current) return CUDA_ERROR_INVALID_CONTEXT;
  *d = reinterpret_cast<Ctx*>(t_current)->device;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize() {
  if (g_default) g_default->sync();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream* s, unsigned int) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  auto* st = new CUstream_st;
  st->ctx = t_current ? reinterpret_cast<Ctx*>(t_current) : &g_ctx[0];
  st->worker = std::thread([st] { st->run(); });
  *s = st;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* s, unsigned int flags, int) { return cuStreamCreate(s, flags); }
CUresult CUDAAPI cuStreamDestroy(CUstream s) {
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  {
    std::lock_guard lk(s->mu);
    s->stop = true;
  }
  s->cv.notify_all();
  // A stream held forever (a simulated hang) never drains: do not wait for it.
  s->worker.detach();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream s) {
  stream_of(s)->sync();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamQuery(CUstream s) {
  CUstream_st* st = stream_of(s);
  std::lock_guard lk(st->mu);
  return st->work.empty() && !st->busy ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
CUresult CUDAAPI cuStreamGetCtx(CUstream s, CUcontext* c) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  *c = reinterpret_cast<CUcontext>(stream_of(s)->ctx);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamIsCapturing(CUstream, CUstreamCaptureStatus* st) {
  if (!st) return CUDA_ERROR_INVALID_VALUE;
  *st = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamWaitValue32(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  auto* p = reinterpret_cast<std::uint32_t*>(static_cast<std::uintptr_t>(addr));
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  stream_of(s)->push([p, value, flags] {
    for (;;) {
      const std::uint32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
      const unsigned mode = flags & 0x3;
      const bool ok = mode == CU_STREAM_WAIT_VALUE_GEQ  ? static_cast<std::int32_t>(v - value) >= 0
                      : mode == CU_STREAM_WAIT_VALUE_EQ ? v == value
                      : mode == CU_STREAM_WAIT_VALUE_AND ? (v & value) != 0
                                                         : ~(v | ~value) != 0;
      if (ok) return;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent* e, unsigned int flags) {
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  *e = new CUevent_st;
  (*e)->flags = flags;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  // Work still queued may reach it: leak it rather than race (a test library).
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  const std::uint64_t gen = e->recorded.fetch_add(1) + 1;
  stream_of(s)->push([e, gen] {
    e->ns.store(now_ns(), std::memory_order_relaxed);
    e->reached.store(gen, std::memory_order_release);
  });
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventQuery(CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  return e->reached.load(std::memory_order_acquire) == e->recorded.load(std::memory_order_relaxed)
             ? CUDA_SUCCESS
             : CUDA_ERROR_NOT_READY;
}
CUresult CUDAAPI cuEventSynchronize(CUevent e) {
  while (cuEventQuery(e) == CUDA_ERROR_NOT_READY) std::this_thread::sleep_for(std::chrono::microseconds(100));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent a, CUevent b) {
  if (!ms || !a || !b) return CUDA_ERROR_INVALID_VALUE;
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (cuEventQuery(a) != CUDA_SUCCESS || cuEventQuery(b) != CUDA_SUCCESS) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>((static_cast<double>(b->ns.load()) - static_cast<double>(a->ns.load())) / 1e6);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* p, size_t bytes) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  void* m = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostAlloc(void** p, size_t bytes, unsigned int) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  *p = std::calloc(1, bytes ? bytes : 1);
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuMemFreeHost(void* p) {
  std::free(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* d, void* p, unsigned int) {
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  *d = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  stream_of(s)->push([dst, src, n] { std::memcpy(reinterpret_cast<void*>(dst), src, n); });
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  stream_of(s)->push([dst, src, n] { std::memcpy(dst, reinterpret_cast<const void*>(src), n); });
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult r, const char** s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  *s = r == CUDA_SUCCESS ? "no error" : r == CUDA_ERROR_NOT_READY ? "device not ready" : "stand-in driver error";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult r, const char** s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  *s = r == CUDA_SUCCESS ? "CUDA_SUCCESS" : r == CUDA_ERROR_NOT_READY ? "CUDA_ERROR_NOT_READY" : "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}

}  // extern "C"
