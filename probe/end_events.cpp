// Job-ending events (see probe_state.hpp): MPI_Abort, fatal signals, MPI
// calls failing under MPI_ERRORS_ARE_FATAL and an exit before MPI_Finalize
// are written into the record's end
// event before the rank goes, so scoutd names
// the first rank that failed and why even when the launcher kills the
// others milliseconds later. The signal path is async-signal-safe: atomic
// stores into the mapped record, sigaction and raise only.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>

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

// The standard MPI error classes, in the order of libc3's kMpiErrorClassNames.
const int kClasses[] = {MPI_ERR_BUFFER,   MPI_ERR_COUNT,    MPI_ERR_TYPE,      MPI_ERR_TAG,     MPI_ERR_COMM,
                        MPI_ERR_RANK,     MPI_ERR_REQUEST,  MPI_ERR_ROOT,      MPI_ERR_GROUP,   MPI_ERR_OP,
                        MPI_ERR_TOPOLOGY, MPI_ERR_DIMS,     MPI_ERR_ARG,       MPI_ERR_UNKNOWN, MPI_ERR_TRUNCATE,
                        MPI_ERR_OTHER,    MPI_ERR_INTERN,   MPI_ERR_IN_STATUS, MPI_ERR_PENDING, MPI_ERR_KEYVAL,
                        MPI_ERR_NO_MEM,   MPI_ERR_INFO,     MPI_ERR_WIN,       MPI_ERR_SIZE,    MPI_ERR_DISP,
                        MPI_ERR_FILE,     MPI_ERR_IO,       MPI_ERR_SPAWN,     MPI_ERR_RMA_SYNC};
static_assert(sizeof kClasses / sizeof kClasses[0] == c3::kMpiErrorClassCount, "one value per name");

MPI_Errhandler g_fatal = MPI_ERRHANDLER_NULL;  // the probe's stand-in for MPI_ERRORS_ARE_FATAL
using FatalFn = void (*)(MPI_Comm*, int*, ...);
FatalFn g_library_fatal = nullptr;  // the MPI library's own MPI_ERRORS_ARE_FATAL function, where found

// An MPI call failed on a communicator whose handler was MPI_ERRORS_ARE_FATAL:
// the record says which rank and which error class, then the library's own
// fatal handler runs (its message, then the job's end) as it would have.
extern "C" void on_mpi_error(MPI_Comm* comm, int* code, ...) {
  const char* name = nullptr;
#ifdef OPEN_MPI
  {  // Open MPI passes the failing function's name after the code
    va_list ap;
    va_start(ap, code);
    name = va_arg(ap, const char*);
    va_end(ap);
  }
#endif
  int cls = 0;
  if (!code || PMPI_Error_class(*code, &cls) != MPI_SUCCESS || cls <= 0 || cls > 1000000) cls = MPI_ERR_OTHER;
  std::uint64_t index = 0;
  for (std::size_t i = 0; i < c3::kMpiErrorClassCount; ++i)
    if (kClasses[i] == cls) index = i + 1;
  write_end(SCOUT_END_ABORT, cls, SCOUT_END_MPI_ERROR | index, comm ? comm_identity(*comm) : 0);
  if (g_library_fatal) g_library_fatal(comm, code, name, nullptr);  // does not return
  // Another MPI library: what MPI_ERRORS_ARE_FATAL means, said and done.
  char text[MPI_MAX_ERROR_STRING] = "unknown error";
  int len = 0;
  if (code) PMPI_Error_string(*code, text, &len);
  std::fprintf(stderr, "*** An error occurred in %s: %s\n*** MPI_ERRORS_ARE_FATAL: the job will now abort\n",
               name ? name : "an MPI call", text);
  PMPI_Abort(comm ? *comm : MPI_COMM_WORLD, code ? *code : 1);
}

}  // namespace

MPI_Errhandler fatal_stand_in() noexcept {
  if (!g_record) return MPI_ERRHANDLER_NULL;  // not observed: nothing to record
  if (g_fatal == MPI_ERRHANDLER_NULL) {
#ifdef OPEN_MPI
    g_library_fatal = reinterpret_cast<FatalFn>(dlsym(RTLD_DEFAULT, "ompi_mpi_errors_are_fatal_comm_handler"));
#endif
    if (PMPI_Comm_create_errhandler(on_mpi_error, &g_fatal) != MPI_SUCCESS) g_fatal = MPI_ERRHANDLER_NULL;
  }
  return g_fatal;
}

void install_mpi_error_handler() noexcept {
  for (MPI_Comm c : {MPI_COMM_WORLD, MPI_COMM_SELF}) {
    MPI_Errhandler current = MPI_ERRHANDLER_NULL;
    if (PMPI_Comm_get_errhandler(c, &current) != MPI_SUCCESS) continue;
    const bool fatal = current == MPI_ERRORS_ARE_FATAL;
    PMPI_Errhandler_free(&current);  // the reference the query took
    if (!fatal) continue;  // the program's own choice (or the launcher's): left alone
    const MPI_Errhandler s = fatal_stand_in();
    if (s == MPI_ERRHANDLER_NULL) return;
    PMPI_Comm_set_errhandler(c, s);
  }
}

void end_abort(int errorcode, MPI_Comm comm) noexcept {
  write_end(SCOUT_END_ABORT, errorcode, 0, comm_identity(comm));
}

namespace {
// A rank that calls exit() (or returns from main) after MPI_Init and before
// MPI_Finalize leaves its peers waiting, and the launcher then ends the
// job: its exit status is the event. MPI_Finalize closed the record first,
// so a normal exit writes nothing; MPI_Abort, an MPI error and a fatal
// signal wrote theirs first (the first event stays); SIGKILL runs nothing.
void on_exit_status(int status, void*) noexcept { write_end(SCOUT_END_EXIT, status & 0xff, 0, 0); }
}  // namespace

void install_fatal_handlers() noexcept {
  install_fatal_chain(on_fatal);
  on_exit(on_exit_status, nullptr);
}

}  // namespace scout::probe
