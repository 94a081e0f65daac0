// The stack sampler (see stack_sampler.hpp).
#include "scoutd/stack/stack_sampler.hpp"

#include <unistd.h>

#include <chrono>
#include <climits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/log.hpp"
#include "common/spawn.hpp"

namespace scout::scoutd {

TakenStack take_stack(const std::string& helper, int pid, double budget_s) {
  TakenStack t;
  const common::SpawnResult r = common::run_command({helper, std::to_string(pid)}, budget_s, 64 * 1024);
  if (r.timed_out) {
    t.error = fmt::format("not unwound within {} s", budget_s);
    return t;
  }
  const std::string line = r.out.substr(0, r.out.find('\n'));
  try {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("frames") && j["frames"].is_array()) {
      for (auto& f : j["frames"]) {
        if (t.frames.size() >= kMaxStackFrames) break;
        t.frames.push_back(f.get<std::string>().substr(0, kMaxFrameChars));
      }
      if (!t.frames.empty()) return t;
      t.error = "no frames";
    } else {
      t.error = j.value("error", std::string("no frames"));
    }
  } catch (const std::exception&) {
    t.error = r.status < 0 ? fmt::format("cannot run {}: {}", helper, r.error)
                           : fmt::format("{} exited {} without a stack", helper, r.status);
  }
  return t;
}

std::string find_stack_helper(const std::string& fallback) {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    std::string dir(buf, static_cast<std::size_t>(n));
    dir.resize(dir.rfind('/'));
    if (dir.size() >= 6 && dir.compare(dir.size() - 6, 6, "/.libs") == 0) dir.resize(dir.size() - 6);
    const std::string here = dir + "/scout-stack";
    if (access(here.c_str(), X_OK) == 0) return here;
  }
  return fallback;
}

void StackSampler::start() { thread_ = std::thread([this] { loop(); }); }

void StackSampler::stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StackSampler::loop() {
  std::unique_lock lk(mu_);
  while (!cv_.wait_for(lk, std::chrono::milliseconds(500), [this] { return stop_; })) {
    lk.unlock();
    for (auto& w : watcher_.stacks_wanted(after_s_.load())) {
      watcher_.set_tracing(w.rank, true);
      TakenStack t = take_stack(helper_, w.pid, budget_s_);
      watcher_.set_tracing(w.rank, false);
      if (!t.error.empty()) log::info("stack of rank {} (pid {}): {}", w.rank, w.pid, t.error);
      watcher_.set_stack(w.rank, w.key, std::move(t.frames), std::move(t.error));
      ++taken_;
      std::lock_guard stopping(mu_);
      if (stop_) return;
    }
    lk.lock();
  }
}

}  // namespace scout::scoutd
