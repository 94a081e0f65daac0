// Reading a mapping the job's user controls without dying of SIGBUS.
//
// A rank's record is a POSIX shm file the job's user owns: truncating it
// while scoutd has it mapped turns the next read into SIGBUS. guarded()
// runs a read that only copies into plain memory (no allocation, no
// destructors: the libc3 readers) under a per-thread recovery point; a
// SIGBUS or SIGSEGV inside it returns false instead of killing scoutd. Outside
// guarded() the signals keep their default action (a real bug still dumps
// core). install_record_guard() is called once, before the reader threads.
#pragma once

#include <csetjmp>

namespace scout::scoutd {

void install_record_guard();

namespace detail {
struct GuardState {
  sigjmp_buf env;
  volatile int active = 0;
};
GuardState& guard_state() noexcept;
}  // namespace detail

namespace detail {
// fn runs in a frame of its own: inlined into guarded(), its locals would
// live in the frame sigsetjmp saved (GCC's -Wclobbered at -O1 under ASan).
template <class F>
[[gnu::noinline]] void guarded_call(F& fn) {
  fn();
}
}  // namespace detail

// Runs fn(); false if a fault on the mapping interrupted it. fn must copy
// only into trivially destructible storage.
template <class F>
bool guarded(F&& fn) noexcept {
  auto& g = detail::guard_state();
  if (sigsetjmp(g.env, 1) != 0) {
    g.active = 0;
    return false;
  }
  g.active = 1;
  detail::guarded_call(fn);
  g.active = 0;
  return true;
}

}  // namespace scout::scoutd
