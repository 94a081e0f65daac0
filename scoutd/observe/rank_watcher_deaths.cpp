// The watcher's deaths (see rank_watcher.hpp): pidfds polled between ticks,
// the launcher's stop notice (deaths after it are the stop's), and the stop
// round's last look at the records from the caller's thread.
#include "scoutd/observe/rank_watcher.hpp"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <mutex>
#include <vector>

namespace scout::scoutd {

namespace {
std::atomic<std::int64_t> g_stopping_ns{0};  // when the launcher said it stops the job; 0: not said
static_assert(std::atomic<std::int64_t>::is_always_lock_free, "set from a signal handler");
}  // namespace

void RankWatcher::note_job_stopping() noexcept {
  std::int64_t unset = 0;
  g_stopping_ns.compare_exchange_strong(unset, monotonic_ns());  // clock_gettime is async-signal-safe
}

std::int64_t RankWatcher::job_stopping_ns() noexcept { return g_stopping_ns.load(); }

bool RankWatcher::died_on_stop(std::int64_t death_ns) noexcept {
  const std::int64_t stop = g_stopping_ns.load();
  return death_ns > 0 && stop > 0 && death_ns >= stop;
}

void RankWatcher::refresh() {
  if (!match_host_.empty()) {
    std::lock_guard lk(mu_);
    discover();  // tick() looks only every fifth time
  }
  tick();
  poll_deaths(0);
}

void RankWatcher::poll_deaths(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<std::size_t> idx;
  {
    std::lock_guard lk(mu_);
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].pidfd >= 0 && slots_[i].death_ns == 0) {
        fds.push_back({slots_[i].pidfd, POLLIN, 0});
        idx.push_back(i);
      }
  }
  if (fds.empty()) {
    timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
    nanosleep(&ts, nullptr);
    return;
  }
  int n = poll(fds.data(), fds.size(), timeout_ms);
  if (n <= 0) return;
  const std::int64_t now = monotonic_ns();
  std::lock_guard lk(mu_);
  for (std::size_t k = 0; k < fds.size(); ++k)
    // Another thread (the stop round's refresh) may have stamped it, or
    // invalidated the slot and its pidfd, while this one waited.
    if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) && slots_[idx[k]].death_ns == 0 &&
        slots_[idx[k]].pidfd == fds[k].fd)
      slots_[idx[k]].death_ns = now;
}

}  // namespace scout::scoutd
