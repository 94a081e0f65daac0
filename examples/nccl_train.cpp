// nccl_train: a data-parallel training loop over NCCL on CUDA streams, the
// shape of a PyTorch DDP step without PyTorch: each step computes a gradient
// on the host, copies it to the GPU, all-reduces it with ncclAllReduce on
// the rank's stream, copies it back and synchronises (as `loss.item()`
// does), and checks the sum; every 10 steps it broadcasts rank 0's
// parameters first (ncclBcast). Built against the real nccl.h and cuda.h and
// the driver API (no CUDA runtime), so the same binary runs on a GPU machine
// and, in scout's tests, on the stand-in libraries under tests/standin.
//
// Launch one process per GPU with any launcher: rank and size come from
// RANK/WORLD_SIZE (torchrun), OMPI_COMM_WORLD_RANK/SIZE (mpirun) or
// SLURM_PROCID/SLURM_NTASKS (srun); the GPU from LOCAL_RANK,
// OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID. Rank 0 publishes NCCL's unique
// id in a file the others read (--id-file; by default one named after the
// launch: PMIX_NAMESPACE or the Slurm job and step, in $TMPDIR or /tmp).
//
//   --pipeline K  K pipeline stages (ranks g*K .. g*K+K-1 form pipeline g):
//                 activations go forward with ncclSend/ncclRecv, gradients
//                 back (a stage's backward receive and send in one group);
//                 with more than one pipeline, each stage's replicas then
//                 all-reduce their gradient on a communicator made with
//                 ncclCommSplit (data parallel). Faults act before the
//                 forward send.
//   --tensor T    tensor-parallel groups of T ranks (ranks g*T .. g*T+T-1,
//                 a communicator made with ncclCommSplit): each step first
//                 all-reduces within the group, then across the world.
//   --fault KIND:rank=R:step=S[:ms=M]
//   KIND: stop (SIGSTOP itself before step S's all-reduce), hang (the host
//         spins before it), crash (SIGSEGV), diverge (a broadcast instead of
//         the all-reduce at step S), gpuhang (from step S the rank's stream
//         waits on a word in host memory that is never written, with
//         cuStreamWaitValue32: the GPU stops, the host goes on issuing),
//         gpuslow (from step S the stream waits M ms per step before the
//         all-reduce: a slow GPU).
#include <cuda.h>
#include <nccl.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void die(int rank, const std::string& msg, int code = 1) {
  std::fprintf(stderr, "nccl_train: rank %d: %s\n", rank, msg.c_str());
  std::exit(code);
}
[[noreturn]] void usage(const std::string& msg) {
  std::fprintf(stderr,
               "nccl_train: %s\n"
               "usage: nccl_train [--steps N] [--count ELEMS] [--step-ms MS] [--print-every K]\n"
               "                  [--id-file PATH] [--pipeline K | --tensor T] [--fault KIND:rank=R:step=S[:ms=M]]\n"
               "KIND is one of stop, hang, crash, diverge, gpuhang, gpuslow\n",
               msg.c_str());
  std::exit(2);
}

long to_long(const std::string& what, const std::string& v, long lo) {
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < lo) usage(what + ": '" + v + "' is not a number >= " + std::to_string(lo));
  return x;
}

int env_first(std::initializer_list<const char*> names, int fallback) {
  for (const char* n : names)
    if (const char* v = std::getenv(n); v && *v) return std::atoi(v);
  return fallback;
}

void check_cu(int rank, CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* s = "?";
  cuGetErrorString(r, &s);
  die(rank, std::string(what) + ": " + s);
}
void check_nccl(int rank, ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  die(rank, std::string(what) + ": " + ncclGetErrorString(r));
}

struct Fault {
  std::string kind;
  int rank = -1;
  long step = -1, ms = 50;
};

std::string default_id_file() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp && *tmp ? tmp : "/tmp";
  std::string key;
  if (const char* ns = std::getenv("PMIX_NAMESPACE"); ns && *ns) key = ns;
  else if (const char* j = std::getenv("SLURM_JOB_ID"); j && *j)
    key = std::string(j) + "." + (std::getenv("SLURM_STEP_ID") ? std::getenv("SLURM_STEP_ID") : "0");
  else return "";
  for (char& c : key)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  return dir + "/nccl_train." + std::to_string(getuid()) + "." + key + ".id";
}

}  // namespace

int main(int argc, char** argv) {
  long steps = 200, count = 4096, print_every = 50;
  double step_ms = 5;
  std::string id_file;
  int pipeline = 0, tensor = 0;
  Fault f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + ": missing value");
      return argv[++i];
    };
    if (a == "--steps") steps = to_long(a, val(), 1);
    else if (a == "--count") count = to_long(a, val(), 1);
    else if (a == "--step-ms") step_ms = static_cast<double>(to_long(a, val(), 0));
    else if (a == "--print-every") print_every = to_long(a, val(), 1);
    else if (a == "--id-file") id_file = val();
    else if (a == "--pipeline") pipeline = static_cast<int>(to_long(a, val(), 2));
    else if (a == "--tensor") tensor = static_cast<int>(to_long(a, val(), 2));
    else if (a == "--fault") {
      std::string spec = val();
      auto c = spec.find(':');
      f.kind = spec.substr(0, c);
      if (f.kind != "stop" && f.kind != "hang" && f.kind != "crash" && f.kind != "diverge" && f.kind != "gpuhang" &&
          f.kind != "gpuslow")
        usage("--fault: unknown kind '" + f.kind + "'; expected stop, hang, crash, diverge, gpuhang or gpuslow");
      std::string rest = c == std::string::npos ? "" : spec.substr(c + 1);
      while (!rest.empty()) {
        auto n = rest.find(':');
        std::string kv = rest.substr(0, n);
        rest = n == std::string::npos ? "" : rest.substr(n + 1);
        auto eq = kv.find('=');
        if (eq == std::string::npos) usage("--fault: '" + kv + "' is not KEY=VALUE; expected rank=R, step=S or ms=M");
        std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
        if (k == "rank") f.rank = static_cast<int>(to_long("--fault rank", v, 0));
        else if (k == "step") f.step = to_long("--fault step", v, 0);
        else if (k == "ms") f.ms = to_long("--fault ms", v, 0);
        else usage("--fault: unknown key '" + k + "'; expected rank, step or ms");
      }
      if (f.rank < 0 || f.step < 0) usage("--fault: rank=R and step=S are required");
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: nccl_train [--steps N] [--count ELEMS] [--step-ms MS] [--print-every K]\n"
                  "                  [--id-file PATH] [--pipeline K | --tensor T] [--fault KIND:rank=R:step=S[:ms=M]]\n"
                  "A data-parallel (or pipeline-parallel) training loop over NCCL, one process per GPU.\n");
      return 0;
    } else {
      usage("unknown option '" + a + "'");
    }
  }
  const int rank = env_first({"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"}, -1);
  const int size = env_first({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"}, -1);
  const int local = env_first({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}, 0);
  if (rank < 0 || size < 1 || rank >= size)
    die(0, "no rank and size in the environment; expected RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/SIZE or "
           "SLURM_PROCID/SLURM_NTASKS (launch with torchrun, mpirun or srun)", 2);
  if (pipeline > 0 && tensor > 0) usage("--pipeline and --tensor: choose one");
  if (tensor > 0 && size % tensor != 0)
    die(rank, "--tensor " + std::to_string(tensor) + " needs a world that is a multiple of " + std::to_string(tensor) +
                  " ranks; it has " + std::to_string(size), 2);
  if (pipeline > 0 && size % pipeline != 0)
    die(rank, "--pipeline " + std::to_string(pipeline) + " needs a world that is a multiple of " +
                  std::to_string(pipeline) + " ranks; it has " + std::to_string(size), 2);
  if (id_file.empty()) id_file = default_id_file();
  if (id_file.empty() && size > 1)
    die(rank, "no --id-file and no PMIX_NAMESPACE or SLURM_JOB_ID to name one", 2);

  check_cu(rank, cuInit(0), "cuInit");
  int ndev = 0;
  check_cu(rank, cuDeviceGetCount(&ndev), "cuDeviceGetCount");
  CUdevice dev;
  check_cu(rank, cuDeviceGet(&dev, local % ndev), "cuDeviceGet");
  CUcontext ctx;
  check_cu(rank, cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check_cu(rank, cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUstream stream;
  check_cu(rank, cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  // The unique id: rank 0 writes it (atomically), the others wait for it.
  ncclUniqueId id;
  if (rank == 0) {
    check_nccl(rank, ncclGetUniqueId(&id), "ncclGetUniqueId");
    if (size > 1) {
      std::string tmp = id_file + ".tmp";
      int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
      if (fd < 0 || write(fd, &id, sizeof id) != static_cast<ssize_t>(sizeof id) || close(fd) != 0 ||
          rename(tmp.c_str(), id_file.c_str()) != 0)
        die(rank, "cannot write the unique id to " + id_file + ": " + std::strerror(errno));
    }
  } else {
    bool got = false;
    for (int t = 0; t < 6000 && !got; ++t) {
      int fd = open(id_file.c_str(), O_RDONLY | O_NOFOLLOW);
      if (fd >= 0) {
        struct stat st {};
        got = fstat(fd, &st) == 0 && st.st_uid == getuid() && read(fd, &id, sizeof id) == static_cast<ssize_t>(sizeof id);
        close(fd);
      }
      if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!got) die(rank, "no unique id in " + id_file + " after 60 s (is rank 0 running?)");
  }
  ncclComm_t comm;
  check_nccl(rank, ncclCommInitRank(&comm, size, id, rank), "ncclCommInitRank");
  if (rank == 0 && size > 1) unlink(id_file.c_str());  // everyone has read it: init is collective

  // Pipeline stages and, with several pipelines, each stage's replicas.
  const int stage = pipeline > 0 ? rank % pipeline : 0;
  ncclComm_t dp = nullptr, tp = nullptr;
  if (pipeline > 0 && size > pipeline)
    check_nccl(rank, ncclCommSplit(comm, stage, rank, &dp, nullptr), "ncclCommSplit");
  if (tensor > 0) check_nccl(rank, ncclCommSplit(comm, rank / tensor, rank, &tp, nullptr), "ncclCommSplit");
  CUdeviceptr grad;
  check_cu(rank, cuMemAlloc(&grad, static_cast<size_t>(count) * sizeof(float)), "cuMemAlloc");
  std::vector<float> host(static_cast<size_t>(count));
  CUdeviceptr params;  // broadcast from rank 0 every 10 steps (ncclBcast)
  check_cu(rank, cuMemAlloc(&params, 64 * sizeof(float)), "cuMemAlloc");
  // The word a faulty GPU waits on (device-mapped host memory).
  std::uint32_t* flag = nullptr;
  CUdeviceptr flag_dev = 0;
  if (f.rank == rank && (f.kind == "gpuhang" || f.kind == "gpuslow")) {
    check_cu(rank, cuMemHostAlloc(reinterpret_cast<void**>(&flag), sizeof *flag, CU_MEMHOSTALLOC_DEVICEMAP),
             "cuMemHostAlloc");
    *flag = 0;
    check_cu(rank, cuMemHostGetDevicePointer(&flag_dev, flag, 0), "cuMemHostGetDevicePointer");
  }
  std::uint32_t slow_k = 0;
  const float expect_scale = static_cast<float>(size) * (static_cast<float>(size) + 1) / 2;
  for (long s = 0; s < steps; ++s) {
    // Every 10 steps rank 0's parameters are broadcast (ncclBcast, which
    // NCCL implements with ncclBroadcast: one operation, not two).
    if (s % 10 == 0)
      check_nccl(rank, ncclBcast(reinterpret_cast<void*>(params), 64, ncclFloat32, 0, comm, stream), "ncclBcast");
    // "Forward and backward": a deterministic gradient, rank-dependent.
    const auto t_end = std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<long>(step_ms * 1000));
    for (long i = 0; i < count; ++i) host[static_cast<size_t>(i)] = static_cast<float>(rank + 1) * static_cast<float>(i % 7 + 1);
    while (std::chrono::steady_clock::now() < t_end) {
    }
    check_cu(rank, cuMemcpyHtoDAsync(grad, host.data(), host.size() * sizeof(float), stream), "cuMemcpyHtoDAsync");
    const bool here = f.rank == rank && s >= f.step;
    if (here && s == f.step) {
      if (f.kind == "stop") raise(SIGSTOP);
      if (f.kind == "crash") {
        std::fprintf(stderr, "nccl_train: rank %d: crashing at step %ld\n", rank, s);
        raise(SIGSEGV);
      }
      if (f.kind == "hang")
        for (volatile bool spin = true; spin;) {
        }
      if (f.kind == "gpuhang") {
        std::fprintf(stderr, "nccl_train: rank %d: GPU held from step %ld\n", rank, s);
        check_cu(rank, cuStreamWaitValue32(stream, flag_dev, 1, CU_STREAM_WAIT_VALUE_GEQ), "cuStreamWaitValue32");
      }
    }
    if (here && f.kind == "gpuslow") {
      // The stream waits for a word a host thread writes M ms from now.
      const std::uint32_t k = ++slow_k;
      check_cu(rank, cuStreamWaitValue32(stream, flag_dev, k, CU_STREAM_WAIT_VALUE_GEQ), "cuStreamWaitValue32");
      std::thread([flag, k, ms = f.ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        __atomic_store_n(flag, k, __ATOMIC_RELEASE);
      }).detach();
    }
    if (pipeline > 0) {
      // Forward: receive the previous stage's activations, send ours on;
      // backward: receive the next stage's gradient and send ours back.
      void* g = reinterpret_cast<void*>(grad);
      const size_t n = static_cast<size_t>(count);
      if (here && s == f.step && f.kind == "diverge") {
        check_nccl(rank, ncclAllReduce(g, g, n, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
      } else {
        const bool first = stage == 0, last = stage == pipeline - 1;
        if (!first) check_nccl(rank, ncclRecv(g, n, ncclFloat32, rank - 1, comm, stream), "ncclRecv");
        if (!last) check_nccl(rank, ncclSend(g, n, ncclFloat32, rank + 1, comm, stream), "ncclSend");
        check_nccl(rank, ncclGroupStart(), "ncclGroupStart");
        if (!last) check_nccl(rank, ncclRecv(g, n, ncclFloat32, rank + 1, comm, stream), "ncclRecv");
        if (!first) check_nccl(rank, ncclSend(g, n, ncclFloat32, rank - 1, comm, stream), "ncclSend");
        check_nccl(rank, ncclGroupEnd(), "ncclGroupEnd");
        if (dp) check_nccl(rank, ncclAllReduce(g, g, n, ncclFloat32, ncclSum, dp, stream), "ncclAllReduce");
      }
      check_cu(rank, cuStreamSynchronize(stream), "cuStreamSynchronize");
      if (rank == 0 && (s + 1) % print_every == 0) std::printf("nccl_train: step %ld/%ld ok\n", s + 1, steps), std::fflush(stdout);
      continue;
    }
    if (tp) {
      // Tensor parallel: the group's partial results first (the all-reduce
      // below then sums tensor x the world: the check scales by it).
      void* g = reinterpret_cast<void*>(grad);
      check_nccl(rank, ncclAllReduce(g, g, static_cast<size_t>(count), ncclFloat32, ncclSum, tp, stream), "ncclAllReduce");
      check_nccl(rank, ncclAllReduce(g, g, static_cast<size_t>(count), ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
      check_cu(rank, cuStreamSynchronize(stream), "cuStreamSynchronize");
      if (rank == 0 && (s + 1) % print_every == 0) std::printf("nccl_train: step %ld/%ld ok\n", s + 1, steps), std::fflush(stdout);
      continue;
    }
    if (here && s == f.step && f.kind == "diverge")
      check_nccl(rank, ncclBroadcast(reinterpret_cast<void*>(grad), reinterpret_cast<void*>(grad),
                                     static_cast<size_t>(count), ncclFloat32, 0, comm, stream),
                 "ncclBroadcast");
    else
      check_nccl(rank, ncclAllReduce(reinterpret_cast<void*>(grad), reinterpret_cast<void*>(grad),
                                     static_cast<size_t>(count), ncclFloat32, ncclSum, comm, stream),
                 "ncclAllReduce");
    check_cu(rank, cuMemcpyDtoHAsync(host.data(), grad, host.size() * sizeof(float), stream), "cuMemcpyDtoHAsync");
    check_cu(rank, cuStreamSynchronize(stream), "cuStreamSynchronize");
    for (long i = 0; i < count; i += 97)
      if (host[static_cast<size_t>(i)] != expect_scale * static_cast<float>(i % 7 + 1))
        die(rank, "step " + std::to_string(s) + ": wrong all-reduce result at element " + std::to_string(i));
    if (rank == 0 && (s + 1) % print_every == 0) std::printf("nccl_train: step %ld/%ld ok\n", s + 1, steps), std::fflush(stdout);
  }
  if (dp) check_nccl(rank, ncclCommDestroy(dp), "ncclCommDestroy");
  if (tp) check_nccl(rank, ncclCommDestroy(tp), "ncclCommDestroy");
  check_nccl(rank, ncclCommDestroy(comm), "ncclCommDestroy");
  if (rank == 0) std::printf("nccl_train: %d ranks, %ld steps done\n", size, steps);
  return 0;
}
