// Job-ending events (see probe_state.hpp): MPI_Abort and fatal signals are
// written into the record's end event before the rank goes, so scoutd names
// the first rank that failed and why even when the launcher kills the
// others milliseconds later. The signal path is async-signal-safe: atomic
// stores into the mapped record, sigaction and raise only.
#include <signal.h>
#include <unistd.h>

#include "probe/fatal_signals.hpp"
#include "probe/probe_state.hpp"

namespace scout::probe {

namespace {

void write_end(std::uint64_t kind, std::int64_t code, std::uint64_t addr, std::uint64_t comm_id) noexcept {
  c3::RankRecord* r = g_record;
  if (!r) return;
  // Only the rank itself: a child it forked shares the mapping and its
  // signal dispositions, and its end is not the rank's.
  if (r->pid != static_cast<std::int32_t>(getpid())) return;
  c3::RecordV6& v6 = c3::v6_of(*r);
  if (__atomic_load_n(&v6.end.tag, __ATOMIC_ACQUIRE) != 0) return;  // the first event stays
  c3::EndEvent& e = v6.end;
  __atomic_store_n(&e.kind, kind, __ATOMIC_RELAXED);
  __atomic_store_n(&e.code, code, __ATOMIC_RELAXED);
  __atomic_store_n(&e.addr, addr, __ATOMIC_RELAXED);
  __atomic_store_n(&e.ns, clock_ns(), __ATOMIC_RELAXED);
  __atomic_store_n(&e.comm_id, comm_id, __ATOMIC_RELAXED);
  __atomic_store_n(&e.seq, current_seq(), __ATOMIC_RELAXED);
  __atomic_store_n(&e.p2p_call, __atomic_load_n(&v6.p2p.call, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  __atomic_store_n(&e.tag, kind, __ATOMIC_RELEASE);
}

void on_fatal(int sig, siginfo_t* info) noexcept {
  std::uint64_t addr = 0;
  if (info && sig != SIGABRT) addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  write_end(SCOUT_END_SIGNAL, sig, addr, 0);
}

}  // namespace

void end_abort(int errorcode, MPI_Comm comm) noexcept {
  write_end(SCOUT_END_ABORT, errorcode, 0, comm_identity(comm));
}

void install_fatal_handlers() noexcept { install_fatal_chain(on_fatal); }

}  // namespace scout::probe
