// probe internals: the process-wide state of the preloaded probe. Runs inside
// the training process: nothing here allocates, locks, logs or makes a
// syscall once MPI_Init has returned (clock reads go through the vDSO).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <ctime>

#include "libc3/rank_record.hpp"

namespace scout::probe {

inline std::uint64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
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
