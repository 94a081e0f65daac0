// SIGBUS/SIGSEGV recovery for reads of user-controlled mappings (see
// record_guard.hpp).
#include "scoutd/observe/record_guard.hpp"

#include <signal.h>

#include <cstring>
#include <mutex>

namespace scout::scoutd {

namespace detail {
namespace {
thread_local GuardState t_guard __attribute__((tls_model("initial-exec")));
}
GuardState& guard_state() noexcept { return t_guard; }
}  // namespace detail

namespace {
struct sigaction g_prev_bus, g_prev_segv;

void on_fault(int sig, siginfo_t* info, void* ctx) {
  auto& g = detail::guard_state();
  if (g.active) {
    g.active = 0;
    siglongjmp(g.env, 1);
  }
  // Not a guarded read: hand over to whoever had the signal before (the
  // default action, or a sanitizer's report).
  const struct sigaction& prev = sig == SIGBUS ? g_prev_bus : g_prev_segv;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) {
      prev.sa_sigaction(sig, info, ctx);
      return;
    }
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);  // returning re-executes the fault with the default action
}
}  // namespace

void install_record_guard() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_prev_bus);
    sigaction(SIGSEGV, &sa, &g_prev_segv);
  });
}

}  // namespace scout::scoutd
