// probe internals: the process-wide state of the preloaded probe. Runs inside
// the training process: nothing here allocates, locks, logs or makes a
// syscall once MPI_Init has returned (clock reads go through the vDSO).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <ctime>

#include "libc3/rank_record.hpp"

namespace scout::probe {

inline std::uint64_t clock_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// The probe's clock: the invariant TSC scaled to nanoseconds when the CPU has
// one (an instruction, ~10 ns cheaper than the vDSO on a kvm-clock VM),
// calibrated against CLOCK_MONOTONIC at MPI_Init; otherwise the vDSO clock.
struct ProbeClock {
  bool use_tsc = false;
  std::uint64_t tsc0 = 0, ns0 = 0;
  double ns_per_tick = 0;
};
extern ProbeClock g_clock;
void clock_calibrate() noexcept;

inline std::uint64_t now_ns() noexcept {
#if defined(__x86_64__)
  if (g_clock.use_tsc)
    return g_clock.ns0 +
           static_cast<std::uint64_t>(static_cast<double>(__builtin_ia32_rdtsc() - g_clock.tsc0) *
                                      g_clock.ns_per_tick);
#endif
  return clock_ns();
}

// Collective fingerprint: a short multiply-xor chain and one finaliser; the
// full libc3 signature is for buffers, this runs on every collective call.
inline std::uint64_t fingerprint_of(std::uint64_t kind, std::uint64_t comm, std::uint64_t count,
                                    std::uint64_t dt, std::uint64_t op, std::uint64_t root) noexcept {
  constexpr std::uint64_t k = 0x9E3779B97F4A7C15ULL;
  std::uint64_t h = 0x5C0075C0075C0075ULL;
  for (std::uint64_t v : {kind, comm, count, dt, op, root}) h = (h ^ v) * k + (h >> 29);
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDULL;
  h ^= h >> 33;
  return h;
}

// Set by probe_init when the environment names a job; null means "do nothing".
extern c3::RankRecord* g_record;

void probe_init() noexcept;      // after PMPI_Init
void probe_finalize() noexcept;  // before PMPI_Finalize

std::uint64_t comm_identity(MPI_Comm comm) noexcept;
void comm_register(MPI_Comm comm) noexcept;
void comm_forget(MPI_Comm comm) noexcept;
std::uint64_t datatype_code(MPI_Datatype t) noexcept;
std::uint64_t op_code(MPI_Op op) noexcept;

void coll_enter(std::uint32_t kind, MPI_Comm comm, std::int64_t count, MPI_Datatype dt,
                MPI_Op op, std::int64_t root) noexcept;
void coll_exit() noexcept;
// After a blocking Allreduce/Bcast/Allgather returned: every Nth signable
// collective of `comm` (SCOUT_OUTSIG_EVERY, default 64, 0 off) signs its
// output buffer (count elements of dt; per member when `per_member`).
void coll_output(std::uint32_t kind, MPI_Comm comm, void* buf, std::int64_t count, MPI_Datatype dt,
                 bool per_member) noexcept;
void nb_started(MPI_Request req) noexcept;

// Wait/Test family support: mark which pending nonblocking collectives are in
// `reqs`, and after the call retire those that completed.
struct WaitScope {
  int slots[8];
  int idx[8];
  int n = 0;
  bool blocking = false;
  std::uint64_t t0 = 0;
  WaitScope(const MPI_Request* reqs, int count, bool blocking) noexcept;
  void done(const MPI_Request* reqs_after) noexcept;
};

}  // namespace scout::probe
