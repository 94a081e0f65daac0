// Test-only fault injection inside the probe, compiled only with
// ./configure --enable-fault-injection (SCOUT_FAULT_INJECTION): a delay
// inside the collectives of a chosen rank (SCOUT_PROBE_TEST_DELAY, a slow
// link) and one flipped bit in an Allreduce's output (SCOUT_PROBE_TEST_CORRUPT).
// Without it every hook is a constant false / no-op and no variable is read:
// a production probe cannot be made to corrupt a job.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace scout::probe::faults {

#ifdef SCOUT_FAULT_INJECTION
extern bool g_delay_active;
extern bool g_corrupt_active;
extern bool g_p2p_delay_active;
void parse(int rank) noexcept;
// SCOUT_PROBE_TEST_P2P_DELAY=rank=R,ms=D,after=N: from its N-th send on, each
// send of this rank is held D ms (a slow link at its endpoint).
void p2p_delay() noexcept;  // reads the variables once, at MPI_Init
void delay(MPI_Comm comm, std::uint64_t seq) noexcept;
void corrupt_output(std::uint32_t kind, void* buf, std::int64_t count, MPI_Datatype dt) noexcept;
#else
inline constexpr bool g_delay_active = false;
inline constexpr bool g_corrupt_active = false;
inline constexpr bool g_p2p_delay_active = false;
inline void p2p_delay() noexcept {}
inline void parse(int) noexcept {}
inline void delay(MPI_Comm, std::uint64_t) noexcept {}
inline void corrupt_output(std::uint32_t, void*, std::int64_t, MPI_Datatype) noexcept {}
#endif

}  // namespace scout::probe::faults
