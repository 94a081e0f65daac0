// mpi_train: a real data-parallel training loop on synthetic data (a small
// MLP regression: forward, backward, gradient MPI_Allreduce, periodic Bcast,
// Allgather and Barrier), with fault injection so scout can be tested:
//   --fault KIND:rank=R:step=S[:ms=M][:us=U][:count=N]
//   KIND: stop (SIGSTOP itself), hang (spin before the next collective),
//         crash (abort), slow (sleep M ms per step from S on), diverge (call a
//         different collective at step S), corrupt (its gradient allreduce
//         at step S delivers a flipped bit: inside the collective through
//         the probe's test hook when scout's probe is loaded, and in the
//         application's copy either way), io (block in a write to a FIFO nobody
//         reads at step S), hog (from step S on, a thread of the rank spins
//         at nice 19: a CPU hog inside the process, count=N threads),
//         deadlock (at step S rank R and rank R+1 each wait in MPI_Recv for
//         the other: an application deadlock), abort (MPI_Abort with error
//         code 3 at step S), slowlink (from step S on, each point-to-point
//         send of the rank is held M ms inside the probe's test hook: a slow
//         link at its endpoint; needs the probe of a fault-injection build).
// Communication modes: the default exchanges gradients with collectives;
//   --halo        a 2-D periodic halo exchange each step (MPI_Cart_create,
//                 MPI_Irecv/MPI_Isend to four neighbours, MPI_Waitall) and
//                 no collective until the end;
//   --pipeline K  K pipeline stages (ranks r, r+1, ... of each group of K):
//                 activations forward and gradients back with blocking
//                 MPI_Send/MPI_Recv, then a gradient Allreduce among the
//                 replicas of each stage when there is more than one group.
//   --msg-kb N    pipeline messages of N KiB (default: H doubles): above the
//                 transport's eager limit a send waits for its receiver to
//                 post the receive (a late receiver is waited for in MPI_Send).
//   --p2p-only    pipeline: no gradient Allreduce between the groups (each
//                 pipeline runs alone, point-to-point calls only).
#include <fcntl.h>
#include <mpi.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Fault {
  std::string kind;  // empty: none
  int rank = -1;
  long step = -1;
  long ms = 50;
  long us = 0;      // slow: microseconds added to ms (sub-millisecond slowdowns)
  long count = -1;  // slow: how many steps (-1: every step from `step` on)
};

struct Options {
  long steps = 100;
  int features = 8, hidden = 16, batch = 64;
  long print_every = 50;
  double step_ms = 2.0;  // extra simulated compute per step
  double jitter = 0.0;   // +- fraction of step_ms, random per rank and step
  unsigned seed = 1;
  int grid_rows = 0, grid_cols = 0;  // --grid RxC
  bool halo = false;                 // --halo
  int pipeline = 0;                  // --pipeline K
  long msg_kb = 0;                   // --msg-kb N
  bool p2p_only = false;             // --p2p-only
  Fault fault;
};

[[noreturn]] void usage_error(int rank, const std::string& msg) {
  if (rank == 0)
    std::fprintf(stderr, "mpi_train: %s\n"
                 "usage: mpi_train [--steps N] [--features F] [--hidden H] [--batch B]\n"
                 "                 [--step-ms MS] [--jitter FRAC] [--print-every K] [--seed S]\n"
                 "                 [--fault KIND:rank=R:step=S[:ms=M][:count=N]] [--grid RxC]\n"
                 "                 [--halo | --pipeline K [--msg-kb N] [--p2p-only]]\n"
                 "KIND is one of stop, hang, crash, slow, diverge, corrupt, io, hog, deadlock, abort, slowlink\n", msg.c_str());
  int init = 0;
  MPI_Initialized(&init);
  if (init) MPI_Finalize();
  std::exit(2);
}

long to_long(int rank, const std::string& what, const std::string& v, long min) {
  errno = 0;
  char* end = nullptr;
  long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < min)
    usage_error(rank, what + ": '" + v + "' is not an integer >= " + std::to_string(min));
  return x;
}

double to_double(int rank, const std::string& what, const std::string& v, double min) {
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || errno || !std::isfinite(x) || x < min)
    usage_error(rank, what + ": '" + v + "' is not a number >= " + std::to_string(min));
  return x;
}

Fault parse_fault(int rank, const std::string& spec) {
  Fault f;
  auto colon = spec.find(':');
  f.kind = spec.substr(0, colon);
  static const char* kKinds[] = {"stop", "hang", "crash", "slow", "diverge", "corrupt", "io", "hog", "deadlock", "abort", "slowlink"};
  bool known = false;
  for (auto* k : kKinds) known |= f.kind == k;
  if (!known)
    usage_error(rank, "--fault: unknown kind '" + f.kind +
                          "'; expected stop, hang, crash, slow, diverge, corrupt, io, hog, deadlock, abort or slowlink");
  std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  while (!rest.empty()) {
    auto next = rest.find(':');
    std::string kv = rest.substr(0, next);
    rest = next == std::string::npos ? "" : rest.substr(next + 1);
    auto eq = kv.find('=');
    if (eq == std::string::npos)
      usage_error(rank, "--fault: '" + kv + "' is not KEY=VALUE; expected rank=R, step=S or ms=M");
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "rank") f.rank = static_cast<int>(to_long(rank, "--fault rank", v, 0));
    else if (k == "step") f.step = to_long(rank, "--fault step", v, 0);
    else if (k == "ms") f.ms = to_long(rank, "--fault ms", v, 0);
    else if (k == "us") f.us = to_long(rank, "--fault us", v, 0);
    else if (k == "count") f.count = to_long(rank, "--fault count", v, 1);
    else usage_error(rank, "--fault: unknown key '" + k + "'; expected rank, step, ms, us or count");
  }
  if (f.rank < 0 || f.step < 0)
    usage_error(rank, "--fault: '" + spec + "' needs rank=R and step=S, e.g. stop:rank=5:step=40");
  return f;
}

Options parse(int rank, int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(rank, a + ": missing value");
      return argv[++i];
    };
    if (a == "--steps") o.steps = to_long(rank, a, val(), 1);
    else if (a == "--features") o.features = static_cast<int>(to_long(rank, a, val(), 1));
    else if (a == "--hidden") o.hidden = static_cast<int>(to_long(rank, a, val(), 1));
    else if (a == "--batch") o.batch = static_cast<int>(to_long(rank, a, val(), 1));
    else if (a == "--print-every") o.print_every = to_long(rank, a, val(), 1);
    else if (a == "--step-ms") o.step_ms = to_double(rank, a, val(), 0);
    else if (a == "--jitter") o.jitter = to_double(rank, a, val(), 0);
    else if (a == "--seed") o.seed = static_cast<unsigned>(to_long(rank, a, val(), 0));
    else if (a == "--fault") o.fault = parse_fault(rank, val());
    else if (a == "--halo") o.halo = true;
    else if (a == "--pipeline") o.pipeline = static_cast<int>(to_long(rank, a, val(), 2));
    else if (a == "--msg-kb") o.msg_kb = to_long(rank, a, val(), 1);
    else if (a == "--p2p-only") o.p2p_only = true;
    else if (a == "--grid") {
      std::string g = val();
      auto x = g.find('x');
      if (x == std::string::npos) usage_error(rank, "--grid: '" + g + "' is not RxC, e.g. 3x4");
      o.grid_rows = static_cast<int>(to_long(rank, "--grid rows", g.substr(0, x), 1));
      o.grid_cols = static_cast<int>(to_long(rank, "--grid columns", g.substr(x + 1), 1));
    }
    else usage_error(rank, "unknown option '" + a + "'");
  }
  if (o.halo && (o.pipeline || o.grid_rows)) usage_error(rank, "--halo: not with --pipeline or --grid");
  if (o.pipeline && o.grid_rows) usage_error(rank, "--pipeline: not with --grid");
  if ((o.msg_kb || o.p2p_only) && !o.pipeline) usage_error(rank, "--msg-kb and --p2p-only: only with --pipeline");
  if (o.msg_kb > (1L << 20)) usage_error(rank, "--msg-kb: at most 1048576 (1 GiB)");
  if (o.halo && (o.fault.kind == "diverge" || o.fault.kind == "corrupt"))
    usage_error(rank, "--fault " + o.fault.kind + ": acts on the gradient Allreduce, which --halo has not");
  return o;
}

struct Model {
  int f, h;
  std::vector<double> w1, b1, w2;  // w1: h x f
  double b2 = 0;
  std::size_t size() const { return w1.size() + b1.size() + w2.size() + 1; }
  void pack(std::vector<double>& v) const {
    v.clear();
    v.insert(v.end(), w1.begin(), w1.end());
    v.insert(v.end(), b1.begin(), b1.end());
    v.insert(v.end(), w2.begin(), w2.end());
    v.push_back(b2);
  }
  void unpack(const std::vector<double>& v) {
    std::size_t k = 0;
    for (auto& x : w1) x = v[k++];
    for (auto& x : b1) x = v[k++];
    for (auto& x : w2) x = v[k++];
    b2 = v[k];
  }
};

}  // namespace

int main(int argc, char** argv) {
  // Options are read before MPI_Init: the corrupt fault is armed through the
  // probe's test hook, which reads its setting at MPI_Init.
  int env_rank = 0;
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char* e = std::getenv(v); e && *e) { env_rank = std::atoi(e); break; }
  Options o = parse(env_rank, argc, argv);
  if (o.fault.kind == "corrupt") {
    // The step's gradient Allreduce (the step+1-th of that many elements)
    // delivers one flipped bit on the faulty rank, as a corrupting link or
    // reduction unit would: the probe flips it before it signs the output.
    const long count = static_cast<long>(o.hidden) * o.features + 2L * o.hidden + 1;
    const std::string hook = "rank=" + std::to_string(o.fault.rank) + ",count=" + std::to_string(count) +
                             ",call=" + std::to_string(o.fault.step + 1) + ",bit=41";
    setenv("SCOUT_PROBE_TEST_CORRUPT", hook.c_str(), 1);
  }
  if (o.fault.kind == "slowlink") {
    // Point-to-point modes send at most 4 messages per step: from step S on.
    const std::string hook = "rank=" + std::to_string(o.fault.rank) + ",ms=" + std::to_string(o.fault.ms) +
                             ",after=" + std::to_string(o.fault.step * 4 + 1);
    setenv("SCOUT_PROBE_TEST_P2P_DELAY", hook.c_str(), 1);
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const bool faulty = o.fault.rank == rank;
  // 2-D decomposition: a row and a column communicator with one exchange
  // each per step (a halo-exchange stand-in).
  MPI_Comm row_comm = MPI_COMM_NULL, col_comm = MPI_COMM_NULL;
  if (o.grid_rows > 0) {
    if (o.grid_rows * o.grid_cols != size)
      usage_error(rank, "--grid: " + std::to_string(o.grid_rows) + "x" + std::to_string(o.grid_cols) +
                            " does not match " + std::to_string(size) + " ranks");
    MPI_Comm_split(MPI_COMM_WORLD, rank / o.grid_cols, rank, &row_comm);
    MPI_Comm_split(MPI_COMM_WORLD, rank % o.grid_cols, rank, &col_comm);
  }

  // Halo mode: a periodic 2-D Cartesian grid, four neighbours.
  MPI_Comm cart = MPI_COMM_NULL;
  int nbr[4] = {MPI_PROC_NULL, MPI_PROC_NULL, MPI_PROC_NULL, MPI_PROC_NULL};
  if (o.halo) {
    int dims[2] = {0, 0}, periods[2] = {1, 1};
    MPI_Dims_create(size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Cart_shift(cart, 0, 1, &nbr[0], &nbr[1]);  // source below, destination above
    MPI_Cart_shift(cart, 1, 1, &nbr[2], &nbr[3]);
  }
  // Pipeline mode: stage = rank % K within each group of K ranks.
  MPI_Comm stage_comm = MPI_COMM_NULL;
  int stage = 0;
  if (o.pipeline) {
    if (size % o.pipeline != 0)
      usage_error(rank, "--pipeline " + std::to_string(o.pipeline) + ": " + std::to_string(size) +
                            " ranks are not a multiple of the stages");
    stage = rank % o.pipeline;
    if (size > o.pipeline) MPI_Comm_split(MPI_COMM_WORLD, stage, rank, &stage_comm);
  }
  std::vector<double> halo_out(static_cast<std::size_t>(4 * o.hidden), 0.0), halo_in(halo_out.size(), 0.0);
  std::vector<double> act(static_cast<std::size_t>(o.msg_kb ? o.msg_kb * 128 : o.hidden), 0.0);

  // Teacher and data shard: deterministic per seed and rank.
  std::mt19937_64 rng(o.seed * 7919 + static_cast<unsigned>(rank));
  std::normal_distribution<double> nd(0, 1);
  std::mt19937_64 teacher_rng(o.seed);
  std::vector<double> teacher(static_cast<std::size_t>(o.features));
  for (auto& t : teacher) t = std::normal_distribution<double>(0, 1)(teacher_rng);

  Model m{o.features, o.hidden, {}, {}, {}, 0};
  std::mt19937_64 init_rng(o.seed + 17);  // same init everywhere
  m.w1.resize(static_cast<std::size_t>(o.hidden * o.features));
  m.b1.assign(static_cast<std::size_t>(o.hidden), 0);
  m.w2.resize(static_cast<std::size_t>(o.hidden));
  for (auto& x : m.w1) x = std::normal_distribution<double>(0, 0.3)(init_rng);
  for (auto& x : m.w2) x = std::normal_distribution<double>(0, 0.3)(init_rng);

  std::vector<double> params, grads(m.size()), sum(m.size());
  std::vector<double> xb(static_cast<std::size_t>(o.features)), hid(static_cast<std::size_t>(o.hidden));
  std::vector<double> losses(static_cast<std::size_t>(size));
  std::uniform_real_distribution<double> jit(-1, 1);
  const double lr = 0.05;
  double loss = 0;

  for (long step = 0; step < o.steps; ++step) {
    // --- compute: forward and backward over the local batch ---------------
    std::fill(grads.begin(), grads.end(), 0.0);
    loss = 0;
    for (int b = 0; b < o.batch; ++b) {
      double y = 0;
      for (int i = 0; i < o.features; ++i) {
        xb[static_cast<std::size_t>(i)] = nd(rng);
        y += teacher[static_cast<std::size_t>(i)] * xb[static_cast<std::size_t>(i)];
      }
      y = std::sin(y);
      double out = m.b2;
      for (int j = 0; j < o.hidden; ++j) {
        double a = m.b1[static_cast<std::size_t>(j)];
        for (int i = 0; i < o.features; ++i)
          a += m.w1[static_cast<std::size_t>(j * o.features + i)] * xb[static_cast<std::size_t>(i)];
        hid[static_cast<std::size_t>(j)] = std::tanh(a);
        out += m.w2[static_cast<std::size_t>(j)] * hid[static_cast<std::size_t>(j)];
      }
      double err = out - y;
      loss += 0.5 * err * err;
      std::size_t off_b1 = m.w1.size(), off_w2 = off_b1 + m.b1.size(), off_b2 = off_w2 + m.w2.size();
      for (int j = 0; j < o.hidden; ++j) {
        double hj = hid[static_cast<std::size_t>(j)];
        grads[off_w2 + static_cast<std::size_t>(j)] += err * hj;
        double dh = err * m.w2[static_cast<std::size_t>(j)] * (1 - hj * hj);
        grads[off_b1 + static_cast<std::size_t>(j)] += dh;
        for (int i = 0; i < o.features; ++i)
          grads[static_cast<std::size_t>(j * o.features + i)] += dh * xb[static_cast<std::size_t>(i)];
      }
      grads[off_b2] += err;
    }
    loss /= o.batch;
    for (auto& g : grads) g /= o.batch;
    double ms = o.step_ms * (1 + o.jitter * jit(rng));
    if (faulty && o.fault.kind == "hog" && step == o.fault.step) {
      const long n = o.fault.count > 0 ? o.fault.count : 1;
      std::fprintf(stderr, "mpi_train: rank %d: injected fault: %ld CPU hog thread(s) from step %ld\n", rank, n, step);
      for (long t = 0; t < n; ++t)
        std::thread([] {
          // nice 19: it takes the idle cycles of this host (simulated nodes
          // share it), so only this rank's own telemetry should change
          setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
          volatile double x = 1;
          for (;;) x = x * 1.0000001 + 1e-9;
        }).detach();
    }
    if (faulty && o.fault.kind == "slow" && step >= o.fault.step &&
        (o.fault.count < 0 || step < o.fault.step + o.fault.count))
      ms += static_cast<double>(o.fault.ms) + static_cast<double>(o.fault.us) / 1000.0;
    if (ms > 0) std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long>(ms * 1000)));

    // --- injected faults before the gradient exchange ---------------------
    if (faulty && step == o.fault.step) {
      if (o.fault.kind == "stop") {
        std::fprintf(stderr, "mpi_train: rank %d: injected fault: SIGSTOP at step %ld\n", rank, step);
        std::raise(SIGSTOP);
      } else if (o.fault.kind == "hang") {
        std::fprintf(stderr, "mpi_train: rank %d: injected fault: hang at step %ld\n", rank, step);
        std::atomic<unsigned long> spin{0};
        for (;;) spin.fetch_add(1, std::memory_order_relaxed);
      } else if (o.fault.kind == "io") {
        // A checkpoint write that never completes: a FIFO nobody reads.
        std::fprintf(stderr, "mpi_train: rank %d: injected fault: blocking write at step %ld\n", rank, step);
        std::string path = "/tmp/mpi_train." + std::to_string(getpid()) + ".fifo";
        if (mkfifo(path.c_str(), 0600) == 0) {
          int fd = open(path.c_str(), O_RDWR);  // no reader will ever drain it
          unlink(path.c_str());
          std::vector<char> chunk(1 << 20, 'x');
          while (fd >= 0 && write(fd, chunk.data(), chunk.size()) > 0) {
          }
        }
      } else if (o.fault.kind == "crash") {
        std::fprintf(stderr, "mpi_train: rank %d: injected fault: abort at step %ld\n", rank, step);
        std::abort();
      } else if (o.fault.kind == "abort") {
        std::fprintf(stderr, "mpi_train: rank %d: injected fault: MPI_Abort(3) at step %ld\n", rank, step);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
    }
    if (o.fault.kind == "deadlock" && step == o.fault.step && size > 1 &&
        (faulty || rank == (o.fault.rank + 1) % size)) {
      // Each of the two waits for the other to send first.
      const int other = faulty ? (o.fault.rank + 1) % size : o.fault.rank;
      if (faulty) std::fprintf(stderr, "mpi_train: rank %d: injected fault: deadlock with rank %d at step %ld\n", rank, other, step);
      double x = 0;
      MPI_Recv(&x, 1, MPI_DOUBLE, other, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&x, 1, MPI_DOUBLE, other, 99, MPI_COMM_WORLD);
    }

    // --- point-to-point modes -------------------------------------------------
    if (o.halo) {
      for (std::size_t k = 0; k < halo_out.size(); ++k) halo_out[k] = grads[k % grads.size()] + loss;
      const int h = o.hidden;
      MPI_Request rq[8];
      for (int d = 0; d < 4; ++d)  // tag d: a message travelling in direction d
        MPI_Irecv(&halo_in[static_cast<std::size_t>(d * h)], h, MPI_DOUBLE, nbr[d], d, cart, &rq[d]);
      for (int d = 0; d < 4; ++d)
        MPI_Isend(&halo_out[static_cast<std::size_t>(d * h)], h, MPI_DOUBLE, nbr[d ^ 1], d, cart, &rq[4 + d]);
      MPI_Waitall(8, rq, MPI_STATUSES_IGNORE);
      double mix = 0;
      for (double v : halo_in) mix += v;
      m.pack(params);
      for (std::size_t k = 0; k < params.size(); ++k) params[k] -= lr * (grads[k] + 1e-6 * mix);
      m.unpack(params);
      if (rank == 0 && (step % o.print_every == o.print_every - 1 || step == o.steps - 1))
        std::printf("step %ld loss %.6f\n", step + 1, loss);
      continue;
    }
    if (o.pipeline) {
      const int h = static_cast<int>(act.size());
      for (int j = 0; j < o.hidden; ++j) act[static_cast<std::size_t>(j) % act.size()] += 1e-3 * grads[static_cast<std::size_t>(j) % grads.size()];
      if (stage > 0) MPI_Recv(act.data(), h, MPI_DOUBLE, rank - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (stage < o.pipeline - 1) MPI_Send(act.data(), h, MPI_DOUBLE, rank + 1, 1, MPI_COMM_WORLD);
      if (stage < o.pipeline - 1) MPI_Recv(act.data(), h, MPI_DOUBLE, rank + 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (stage > 0) MPI_Send(act.data(), h, MPI_DOUBLE, rank - 1, 2, MPI_COMM_WORLD);
      if (stage_comm != MPI_COMM_NULL && !o.p2p_only)
        MPI_Allreduce(grads.data(), sum.data(), static_cast<int>(grads.size()), MPI_DOUBLE, MPI_SUM, stage_comm);
      else
        sum = grads;
      m.pack(params);
      for (std::size_t k = 0; k < params.size(); ++k) params[k] -= lr * sum[k];
      m.unpack(params);
      if (rank == 0 && (step % o.print_every == o.print_every - 1 || step == o.steps - 1))
        std::printf("step %ld loss %.6f\n", step + 1, loss);
      continue;
    }

    // --- 2-D exchange: row, then column --------------------------------------
    if (row_comm != MPI_COMM_NULL) {
      double halo = loss, got = 0;
      MPI_Allreduce(&halo, &got, 1, MPI_DOUBLE, MPI_SUM, row_comm);
      MPI_Allreduce(&halo, &got, 1, MPI_DOUBLE, MPI_SUM, col_comm);
    }

    // --- communication: average the gradients ----------------------------
    if (faulty && step == o.fault.step && o.fault.kind == "diverge") {
      std::fprintf(stderr, "mpi_train: rank %d: injected fault: Barrier instead of Allreduce at step %ld\n", rank, step);
      MPI_Barrier(MPI_COMM_WORLD);
    } else {
      MPI_Allreduce(grads.data(), sum.data(), static_cast<int>(grads.size()), MPI_DOUBLE, MPI_SUM,
                    MPI_COMM_WORLD);
    }
    if (faulty && step == o.fault.step && o.fault.kind == "corrupt") {
      std::uint64_t bits;
      std::memcpy(&bits, &sum[0], sizeof bits);
      bits ^= 1ULL << 40;
      std::memcpy(&sum[0], &bits, sizeof bits);
      std::fprintf(stderr, "mpi_train: rank %d: injected fault: bit flip in allreduce output at step %ld\n", rank, step);
    }
    m.pack(params);
    for (std::size_t k = 0; k < params.size(); ++k) params[k] -= lr * sum[k] / size;
    m.unpack(params);

    if (step % 10 == 9) {  // keep replicas identical
      m.pack(params);
      MPI_Bcast(params.data(), static_cast<int>(params.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
      m.unpack(params);
    }
    if (step % 20 == 19) {
      MPI_Allgather(&loss, 1, MPI_DOUBLE, losses.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
      double mean = 0;
      for (double l : losses) mean += l;
      loss = mean / size;
    }
    if (step % 50 == 49) MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && (step % o.print_every == o.print_every - 1 || step == o.steps - 1))
      std::printf("step %ld loss %.6f\n", step + 1, loss);
  }
  if (row_comm != MPI_COMM_NULL) {
    MPI_Comm_free(&row_comm);
    MPI_Comm_free(&col_comm);
  }
  if (o.halo || o.pipeline) {  // one result for the whole job
    double mine = loss;
    MPI_Allreduce(&mine, &loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    loss /= size;
  }
  if (cart != MPI_COMM_NULL) MPI_Comm_free(&cart);
  if (stage_comm != MPI_COMM_NULL) MPI_Comm_free(&stage_comm);
  if (rank == 0) std::printf("done: %ld steps on %d ranks, final loss %.6f\n", o.steps, size, loss);
  std::fflush(stdout);
  MPI_Finalize();
  return 0;
}
