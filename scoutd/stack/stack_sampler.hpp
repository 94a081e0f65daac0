// Where every rank is, on every hang: scoutd's stack sampler. A thread that
// asks the node's rank watcher for ranks stalled for at least `after_s`
// (half the stall threshold: before a hang verdict is drafted) whose stack
// was not taken during this stall, and takes each one's with the
// scout-stack helper (ptrace through libdwfl; the rank is stopped only
// while it is unwound, and left running or stopped as it was), under a
// deadline per rank. The stack rides with the rank's evidence to the
// deciding observer, which puts the stack classes of all ranks in the
// verdict (stack_classes.hpp). A healthy job makes progress, so nothing is
// traced; a rank is traced at most once per stall.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "scoutd/observe/rank_watcher.hpp"

namespace scout::scoutd {

struct TakenStack {
  std::vector<std::string> frames;  // innermost first
  std::string error;                // why not ("" when frames were taken)
};

// Runs `helper PID` under the deadline and reads its first line. Never throws.
TakenStack take_stack(const std::string& helper, int pid, double budget_s);

// The scout-stack beside this program (scoutd and scout-stack are installed
// in one directory; in a build tree, scoutd/), else `fallback`.
std::string find_stack_helper(const std::string& fallback);

class StackSampler {
 public:
  StackSampler(RankWatcher& w, std::string helper, double after_s, double budget_s)
      : watcher_(w), helper_(std::move(helper)), after_s_(after_s), budget_s_(budget_s) {}
  ~StackSampler() { stop(); }
  void start();
  void stop();
  std::uint64_t taken() const { return taken_; }
  // The stall threshold changed (scoutctl set): half of it from now on.
  void set_after(double after_s) { after_s_.store(after_s); }

 private:
  void loop();
  RankWatcher& watcher_;
  std::string helper_;
  std::atomic<double> after_s_;
  double budget_s_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<std::uint64_t> taken_{0};
};

}  // namespace scout::scoutd
