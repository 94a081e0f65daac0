// ReplayRunner (see runner.hpp).
#include "replay/runner.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <utility>

namespace scout::replay {
namespace {

std::uint64_t unix_ms() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

void pin_to(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  sched_setaffinity(0, sizeof set, &set);  // this thread only
}

GpuBackend& gpu_backend() {
  static GpuBackend b;
  return b;
}

}  // namespace

void set_gpu_backend(GpuBackend b) { gpu_backend() = std::move(b); }

std::uint64_t cycle_seed(long cycle) noexcept {
  std::uint64_t z = static_cast<std::uint64_t>(cycle) * 0x9E3779B97F4A7C15ULL + 0x5C0DE5EEDULL;
  z = (z ^ (z >> 31)) * 0xD6E8FEB86659FD93ULL;
  return z ^ (z >> 32);
}

ReplayRunner::ReplayRunner(std::string node, ReplayOptions opt, FaultInjector faults)
    : node_(std::move(node)), opt_(std::move(opt)), faults_(std::move(faults)) {
  budget_.store(opt_.budget);
  cores_ = opt_.cores.empty() ? allowed_cpus() : opt_.cores;
  if (opt_.recipes.empty()) opt_.recipes.assign(std::begin(kAllRecipes), std::end(kAllRecipes));
  if (opt_.node_cpus <= 0) opt_.node_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (opt_.node_cpus <= 0) opt_.node_cpus = 1;
  class_ = cpu_class(cores_.empty() ? 0 : cores_.front()).key();
  thread_ = std::thread([this] { loop(); });
}

ReplayRunner::~ReplayRunner() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ReplayRunner::start_cycle(long cycle) {
  {
    std::lock_guard lk(mu_);
    if (cycle <= last_started_) return;
    last_started_ = cycle;
    jobs_.push_back({cycle, "", "", 1});
  }
  cv_.notify_all();
}

void ReplayRunner::rerun(long cycle, const std::string& device, const std::string& recipe, int times) {
  {
    std::lock_guard lk(mu_);
    jobs_.push_back({cycle, device, recipe, times});
  }
  cv_.notify_all();
}

std::vector<Report> ReplayRunner::take_finished() {
  std::lock_guard lk(mu_);
  return std::exchange(done_, {});
}

void ReplayRunner::put_back(std::vector<Report> reports) {
  std::lock_guard lk(mu_);
  for (auto& r : reports) done_.push_back(std::move(r));
}

std::size_t ReplayRunner::pending() const {
  std::lock_guard lk(mu_);
  return done_.size();
}

bool ReplayRunner::busy() const {
  std::lock_guard lk(mu_);
  return running_ || !jobs_.empty();
}

// After `cpu_ns` of work, wait so that the replay's share of the node's CPU
// time stays within the budget: work / (work + wait) <= budget x node CPUs.
void ReplayRunner::pace(std::uint64_t cpu_ns) {
  const double share = std::min(1.0, budget_.load() * opt_.node_cpus);
  if (share >= 1.0) return;
  const auto wait = std::chrono::nanoseconds(static_cast<std::int64_t>(cpu_ns * (1.0 / share - 1.0)));
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, wait, [this] { return stop_; });
}

Report ReplayRunner::run_job(const Job& j) {
  Report rep;
  rep.cycle = j.cycle;
  rep.node = node_;
  rep.cpu_class = class_;
  rep.started_unix_ms = unix_ms();
  const auto w0 = std::chrono::steady_clock::now();
  std::uint64_t cpu = 0;
  auto one = [&](int core, Recipe r) {
    pin_to(core);
    const int bit = faults_.bit_for(node_, core, r, j.cycle);
    RecipeResult res = run_recipe(r, cycle_seed(j.cycle) ^ static_cast<std::uint64_t>(r), opt_.scale, bit);
    rep.results.push_back({"cpu" + std::to_string(core), core, recipe_name(r), res.signature,
                           res.elapsed_ns, res.cpu_ns});
    cpu += res.cpu_ns;
    pace(res.cpu_ns);
  };
  auto gpu = [&](int dev, const std::string& only, const std::string& keep_device) {
    auto& b = gpu_backend();
    std::string err;
    auto res = b.run(dev, cycle_seed(j.cycle), faults_.gpu_flips(node_, dev, j.cycle), only, err);
    for (auto& r : res)
      if (keep_device.empty() || r.device == keep_device) rep.results.push_back(std::move(r));
    if (!err.empty()) rep.gpu_error = err;
  };
  if (j.device.empty()) {
    for (int core : cores_)
      for (Recipe r : opt_.recipes) {
        {
          std::lock_guard lk(mu_);
          if (stop_) break;
        }
        one(core, r);
      }
    if (gpu_backend().devices && gpu_backend().run) {
      std::string err;
      const int n = gpu_backend().devices(err);
      if (n < 0) rep.gpu_error = "GPUs that cannot be checked: " + err;  // never "no GPU"
      for (int d = 0; d < n; ++d) gpu(d, "", "");
    }
  } else if (j.device.rfind("gpu", 0) == 0) {
    rep.rerun_device = j.device;
    rep.rerun_recipe = j.recipe;
    const int dev = std::atoi(j.device.c_str() + 3);
    if (gpu_backend().run)
      for (int t = 0; t < j.times; ++t) gpu(dev, j.recipe, j.device);
  } else {
    rep.rerun_device = j.device;
    rep.rerun_recipe = j.recipe;
    const int core = std::atoi(j.device.c_str() + 3);  // "cpuN"
    rep.rerun_of = core;
    auto r = recipe_from_name(j.recipe);
    if (r)
      for (int t = 0; t < j.times; ++t) one(core, *r);
  }
  rep.cpu_s = cpu / 1e9;
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  rep.finished_unix_ms = unix_ms();
  return rep;
}

void ReplayRunner::loop() {
  // Lowest priority: the live job always comes first.
  if (opt_.idle_priority) {
    sched_param p{};
    sched_setscheduler(0, SCHED_IDLE, &p);
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
  }
  for (;;) {
    Job j;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [this] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      j = jobs_.front();
      jobs_.pop_front();
      running_ = true;
    }
    Report r = run_job(j);
    std::lock_guard lk(mu_);
    running_ = false;
    if (stop_) return;
    done_.push_back(std::move(r));
  }
}

}  // namespace scout::replay
