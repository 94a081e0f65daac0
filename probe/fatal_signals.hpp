// Fatal signals for both probes (no MPI, no NCCL): a hook runs first (it
// writes the record's end event), then the handler that was there before, or
// the default action. Async-signal-safe as long as the hook is.
#pragma once

#include <signal.h>

namespace scout::probe {

// Called with the signal and its siginfo (may be null) from the handler.
using FatalHook = void (*)(int sig, siginfo_t* info) noexcept;

// Installs the chain for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT; a
// signal the program ignores stays ignored. Call once per library.
void install_fatal_chain(FatalHook hook) noexcept;

}  // namespace scout::probe
