// Fatal-signal chain shared by libscout_probe.so and libscout_nccl.so (see
// fatal_signals.hpp). Each library has its own copy (hidden visibility): in a
// process that loads both, the second installed calls the first.
#include "probe/fatal_signals.hpp"

#include <cerrno>
#include <cstring>

namespace scout::probe {

namespace {

constexpr int kFatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_previous[sizeof kFatal / sizeof kFatal[0]];
FatalHook g_hook = nullptr;

void on_fatal(int sig, siginfo_t* info, void* ctx) {
  const int saved = errno;
  if (g_hook) g_hook(sig, info);
  for (std::size_t i = 0; i < sizeof kFatal / sizeof kFatal[0]; ++i) {
    if (kFatal[i] != sig) continue;
    const struct sigaction& old = g_previous[i];
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) {
      errno = saved;
      old.sa_sigaction(sig, info, ctx);  // e.g. the MPI library's backtrace handler
      return;
    }
    if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN && old.sa_handler) {
      errno = saved;
      old.sa_handler(sig);
      return;
    }
    // Default action: restore it and raise again; the signal stays blocked
    // until this handler returns, then the default action ends the process.
    sigaction(sig, &old, nullptr);
    raise(sig);
    errno = saved;
    return;
  }
}

}  // namespace

void install_fatal_chain(FatalHook hook) noexcept {
  g_hook = hook;
  for (std::size_t i = 0; i < sizeof kFatal / sizeof kFatal[0]; ++i) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(kFatal[i], nullptr, &g_previous[i]) != 0) continue;
    if (g_previous[i].sa_handler == SIG_IGN) continue;  // the program ignores it: so do we
    sigaction(kFatal[i], &sa, nullptr);
  }
}

}  // namespace scout::probe
