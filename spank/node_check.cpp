// Root's own node checks (see node_check.hpp).
#include "spank/node_check.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <string_view>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>

#include "common/gpu_health.hpp"
#include "common/proc_info.hpp"
#include "common/root_file.hpp"
#include "libc3/verdict_rules.hpp"

#include "replay/recipes.hpp"
#include "replay/runner.hpp"

namespace scout::spank {

using nlohmann::json;

bool NodeCheck::failed() const {
  for (auto& c : checks)
    if (c.result == "fail") return true;
  return false;
}

std::string NodeCheck::failures() const {
  std::string out;
  for (auto& c : checks)
    if (c.result == "fail") out += (out.empty() ? "" : "; ") + c.check + ": " + c.detail;
  return out;
}

json NodeCheck::to_json() const {
  json a = json::array();
  for (auto& c : checks) a.push_back({{"check", c.check}, {"result", c.result}, {"detail", c.detail}});
  return a;
}

std::uint64_t node_check_seed() noexcept { return replay::cycle_seed(-1); }

namespace {

std::string hex(std::uint64_t v) { return fmt::format("{:016x}", v); }

replay::FaultInjector load_faults(const NodeCheckOptions& opt) {
#ifdef SCOUT_FAULT_INJECTION
  if (!opt.fault_file.empty()) {
    if (const auto file = common::read_root_file(opt.fault_file, 4096)) {
      const std::string& text = *file;
      if (!text.empty()) {
        try {
          return replay::FaultInjector(replay::parse_fault_specs(text));
        } catch (const std::exception&) {
        }
      }
    }
  }
#else
  (void)opt;
#endif
  return {};
}

struct CoreRun {
  int core;
  std::string cls;
  std::string recipe;
  std::uint64_t signature;
};

// Runs `recipes` on each of `cores`, one pinned thread per core.
std::vector<CoreRun> run_on_cores(const NodeCheckOptions& opt, const std::vector<int>& cores,
                                  const std::vector<replay::Recipe>& recipes, long cycle, std::uint64_t seed) {
  replay::FaultInjector faults = load_faults(opt);
  std::mutex mu;
  std::vector<CoreRun> out;
  std::vector<std::thread> threads;
  for (int core : cores) {
    threads.emplace_back([&, core] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(core, &set);
      sched_setaffinity(0, sizeof set, &set);
      const std::string cls = replay::cpu_class(core).key();
      for (auto r : recipes) {
        int bit;
        {
          std::lock_guard lk(mu);
          bit = faults.bit_for(opt.node, core, r, std::max(cycle, 0L));
        }
        auto res = replay::run_recipe(r, seed ^ static_cast<std::uint64_t>(r), 1, bit);
        std::lock_guard lk(mu);
        out.push_back({core, cls, replay::recipe_name(r), res.signature});
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// Compares the runs: per class and recipe, the strict-majority signature of
// the cores, then the site's reference for (class, recipe, seed). Returns
// the disagreements; records references from clean runs.
std::vector<std::string> compare_runs(const std::vector<CoreRun>& runs, sql::Ledger* site, const std::string& seed,
                                      const std::string& node, int only_core = -1) {
  std::map<std::pair<std::string, std::string>, std::vector<const CoreRun*>> groups;
  for (auto& r : runs) groups[{r.cls, r.recipe}].push_back(&r);
  for (auto& [key, rs] : groups)  // threads finish in any order: report by core
    std::sort(rs.begin(), rs.end(), [](const CoreRun* a, const CoreRun* b) { return a->core < b->core; });
  std::vector<std::string> bad;
  for (auto& [key, rs] : groups) {
    std::vector<std::uint64_t> sigs;
    for (auto* r : rs) sigs.push_back(r->signature);
    const auto c = c3::exact_consensus(sigs);  // the cores' strict majority, the same rule as scoutd's
    const bool strict = c.majority_value.has_value();
    const std::uint64_t majority = c.majority_value.value_or(0);
    std::optional<std::string> ref;
    if (site) ref = site->reference_signature(key.first, key.second, seed);
    for (auto* r : rs) {
      if (only_core >= 0 && r->core != only_core) continue;
      const std::string sig = hex(r->signature);
      if (ref && sig != *ref)
        bad.push_back(fmt::format("core {} {} signature {} differs from the site reference {} of its CPU class",
                                  r->core, r->recipe, sig, *ref));
      else if (!ref && rs.size() >= 2 && (!strict || r->signature != majority))
        bad.push_back(fmt::format("core {} {} signature {} differs from the node's other cores ({})", r->core,
                                  r->recipe, sig, strict ? hex(majority) : std::string("no majority")));
    }
    // A class whose every core agrees (and matches any reference) becomes
    // the reference: root computed it, on a node that passed.
    if (site && !ref && c.outcome == c3::ExactOutcome::kAgree && only_core < 0) site->record_reference(key.first, key.second, seed, hex(majority), node);
  }
  return bad;
}

CheckResult check_replay(const NodeCheckOptions& opt, sql::Ledger* site) {
  const std::vector<int> cores = replay::allowed_cpus();
  std::vector<replay::Recipe> all(std::begin(replay::kAllRecipes), std::end(replay::kAllRecipes));
  const auto t0 = std::chrono::steady_clock::now();
  auto runs = run_on_cores(opt, cores, all, -1, node_check_seed());
  auto bad = compare_runs(runs, site, hex(node_check_seed()), opt.node);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!bad.empty()) return {"replay", "fail", fmt::format("{} ({} more)", bad.front(), bad.size() - 1)};
  return {"replay", "pass", fmt::format("{} recipes on {} cores agree ({:.2f} s)", all.size(), cores.size(), s)};
}

// D state is corroboration only, never a failure by itself: any user can
// hold a process of hers in uninterruptible sleep (a parent waiting in
// vfork() while its child sleeps, a FUSE or NFS mount she serves, a
// SIGSTOPped peer of a pipe), so a failing d_state would let a user drain
// any node she runs on. It is recorded ("corroborates") beside the checks
// that decide, for the operator; waits a user is known to hold are left out.
bool user_holdable_wait(const std::string& wchan) {
  static const char* const kUserHeld[] = {"vfork", "kernel_clone", "do_fork", "pipe_", "futex", "fuse_",
                                          "do_wait", "wait_woken", "unix_stream"};
  for (const char* w : kUserHeld)
    if (wchan.find(w) != std::string::npos) return true;
  return false;
}

CheckResult check_d_state(const NodeCheckOptions& opt) {
  auto sample = [] {
    std::map<int, std::string> d;
    DIR* dir = opendir("/proc");
    if (!dir) return d;
    while (dirent* e = readdir(dir)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (*end || pid <= 0) continue;
      std::string name, fields;
      if (!common::proc_stat(static_cast<pid_t>(pid), &name, &fields) || fields[0] != 'D') continue;
      const std::string wchan = common::proc_wchan(static_cast<pid_t>(pid));
      if (user_holdable_wait(wchan)) continue;
      d[static_cast<int>(pid)] = name + " in " + wchan;
    }
    closedir(dir);
    return d;
  };
  auto first = sample();
  if (first.empty()) return {"d_state", "pass", "no process in uninterruptible sleep"};
  std::this_thread::sleep_for(std::chrono::duration<double>(opt.dstate_wait_s));
  auto second = sample();
  std::vector<std::string> stuck;
  for (auto& [pid, what] : first)
    if (auto it = second.find(pid); it != second.end() && it->second == what)
      stuck.push_back(fmt::format("pid {} ({})", pid, what));
  if (stuck.empty()) return {"d_state", "pass", "no process stayed in uninterruptible sleep"};
  return {"d_state", "corroborates",
          fmt::format("{} process(es) in uninterruptible sleep for {:.0f} s: {} (recorded, never decisive: a user "
                      "can hold a process in D state)", stuck.size(), opt.dstate_wait_s, stuck.front())};
}

}  // namespace

// A kernel-log record that the hardware, not a process, caused. Only
// records of the kernel facility count (a user's write to /dev/kmsg is
// LOG_USER), and only messages that start with an anchor whose text runs
// past what a task name can supply. The kernel prints many records that
// *start* with a task's name (TASK_COMM_LEN 16: at most 15 bytes, any bytes
// the task chose): "%s[%d]: segfault at ...", "%s invoked oom-killer: ...",
// "%s (%d): drop_caches: ...". So a process that names itself "EDAC MC0: 1 CE "
// and crashes, or meets its cgroup's OOM killer, writes a kernel-facility
// record that starts with a short anchor. Two rules close that:
//   - an anchor counts only where it reaches byte 16 and byte 16 (index 15)
//     is anchor text that no task-name record has there: the kernel's text
//     after a task name always begins with '[', '(', ':' or ' ';
//   - EDAC's memory-controller lines ("EDAC MC0: 1 CE ...", 14 bytes and
//     more) fit in a task name whole: they are not read from the log at all.
//     EDAC is read from its sysfs counters (check_edac), which only the
//     kernel's drivers write.
// What remains: machine checks ("mce: [Hardware Error]: ", "[Hardware
// Error]: " from APEI/GHES, "mce: CPU<n>: Machine Check") and NVIDIA Xid
// lines with their PCI address ("NVRM: Xid (PCI:0000:3b:00): 79, ").
// Hung-task lines name a process the user may own and are left out.
bool hardware_kernel_record(const std::string& record) {
  // "prio,seq,usec,flags;message": facility = prio >> 3, the kernel's is 0.
  const auto comma = record.find(',');
  const auto semi = record.find(';');
  if (comma == std::string::npos || semi == std::string::npos || semi < comma) return false;
  const long prio = std::strtol(record.substr(0, comma).c_str(), nullptr, 10);
  if ((prio >> 3) != 0) return false;
  std::string m = record.substr(semi + 1);
  if (auto nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
  // Beyond a task name: the anchor matched up to `at` > 15 bytes and the
  // 16th byte cannot follow a task name in a kernel record.
  constexpr std::size_t kTaskName = 15;  // TASK_COMM_LEN - 1
  auto beyond_task_name = [&](std::size_t matched) {
    return matched > kTaskName && std::strchr("[(: ", m[kTaskName]) == nullptr;
  };
  // A cursor over the message: each anchor is literal text, digits, or a
  // run of a character set, matched from the start (no std::regex: it trips
  // GCC 12's -Wmaybe-uninitialized under the sanitizers).
  std::size_t at = 0;
  auto lit = [&](std::string_view t) {
    if (m.compare(at, t.size(), t) != 0) return false;
    at += t.size();
    return true;
  };
  auto run = [&](const char* set, std::size_t n_min, std::size_t n_max) {  // n_min..n_max characters of `set`
    const std::size_t from = at;
    while (at < m.size() && at - from < n_max && m[at] != 0 && std::strchr(set, m[at])) ++at;
    return at - from >= n_min;
  };
  auto anchored = [&](auto&& match) {
    at = 0;
    return match() && beyond_task_name(at);
  };
  static const char* kDigits = "0123456789";
  static const char* kHex = "0123456789abcdefABCDEF";
  return anchored([&] { return lit("mce: [Hardware Error]: "); }) ||
         anchored([&] { return lit("[Hardware Error]: "); }) ||
         anchored([&] { return lit("mce: CPU") && run(kDigits, 1, 6) && lit(": Machine Check"); }) ||
         anchored([&] {
           // NVRM: Xid (PCI:DDDD:BB:DD): N, : the PCI address, then the Xid number
           return lit("NVRM: Xid (PCI:") && run(kHex, 4, 4) && lit(":") && run(kHex, 2, 2) && lit(":") &&
                  run(kHex, 2, 2) && (lit(".") ? run(kHex, 1, 1) : true) && lit("): ") && run(kDigits, 1, 4) &&
                  lit(", ");
         });
}

CheckResult check_kernel_log(const NodeCheckOptions& opt) {
  const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {"kernel_log", "unavailable", fmt::format("/dev/kmsg: {}", std::strerror(errno))};
  ::lseek(fd, 0, SEEK_DATA);  // from the oldest record kept
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // /dev/kmsg stamps are CLOCK_MONOTONIC microseconds
  const double now_s = now.tv_sec + now.tv_nsec / 1e9;
  std::vector<std::string> hits;
  char buf[8192];
  for (int records = 0; records < 100000; ++records) {
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    if (n < 0 && errno == EPIPE) continue;  // overwritten while reading: next record
    if (n <= 0) break;
    buf[n] = 0;
    // "prio,seq,usec,flags;message"
    unsigned long long usec = 0;
    const char* p = std::strchr(buf, ',');
    if (p) p = std::strchr(p + 1, ',');
    if (p) usec = std::strtoull(p + 1, nullptr, 10);
    if (now_s - usec / 1e6 > opt.kernel_log_since_s) continue;
    const char* msg = std::strchr(buf, ';');
    if (!msg || !hardware_kernel_record(buf)) continue;
    std::string m(msg + 1);
    if (auto nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
    hits.push_back(m.substr(0, 200));
  }
  ::close(fd);
  if (hits.empty())
    return {"kernel_log", "pass", fmt::format("no machine-check or GPU Xid record of the kernel in {:.0f} h",
                                              opt.kernel_log_since_s / 3600)};
  return {"kernel_log", "fail", fmt::format("{} record(s), the last: {}", hits.size(), hits.back())};
}

namespace {

// EDAC's own counters (sysfs, written by the kernel's memory-controller
// drivers): an uncorrected error since boot fails the node.
CheckResult check_edac() {
  DIR* dir = opendir("/sys/devices/system/edac/mc");
  if (!dir) return {"edac", "unavailable", "no EDAC memory controller in sysfs"};
  long ue = 0, ce = 0;
  int controllers = 0;
  while (dirent* e = readdir(dir)) {
    if (std::strncmp(e->d_name, "mc", 2) != 0 || !std::isdigit(static_cast<unsigned char>(e->d_name[2]))) continue;
    ++controllers;
    auto read = [&](const char* f) {
      std::ifstream in(fmt::format("/sys/devices/system/edac/mc/{}/{}", e->d_name, f));
      long v = 0;
      in >> v;
      return in ? v : 0;
    };
    ue += read("ue_count");
    ce += read("ce_count");
  }
  closedir(dir);
  if (controllers == 0) return {"edac", "unavailable", "no EDAC memory controller in sysfs"};
  if (ue > 0) return {"edac", "fail", fmt::format("{} uncorrected memory error(s) since boot ({} corrected)", ue, ce)};
  return {"edac", "pass", fmt::format("no uncorrected memory error since boot ({} corrected)", ce)};
}

}  // namespace

// rasdaemon's database, where the site runs it: machine checks and memory
// errors as the kernel's RAS tracepoints reported them (root's daemon
// writes it; a file a user could write is not read). Only records within
// `since_s` count; rasdaemon stamps local time ("%Y-%m-%d %H:%M:%S %z").
CheckResult check_rasdaemon(const NodeCheckOptions& opt, const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return {"rasdaemon", "unavailable", "no rasdaemon database (" + path + ")"};
  if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
    return {"rasdaemon", "unavailable", fmt::format("{}: not a regular file of root's that only root writes", path)};
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW, nullptr) != SQLITE_OK) {
    const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return {"rasdaemon", "unavailable", fmt::format("{}: {}", path, why)};
  }
  sqlite3_busy_timeout(db, 2000);
  const std::time_t since = std::time(nullptr) - static_cast<std::time_t>(opt.kernel_log_since_s);
  std::tm tm{};
  localtime_r(&since, &tm);
  char cutoff[32];
  std::strftime(cutoff, sizeof cutoff, "%Y-%m-%d %H:%M:%S", &tm);
  auto count = [&](const char* sql, bool* ok) -> long {
    sqlite3_stmt* st = nullptr;
    long n = 0;
    *ok = sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK;
    if (*ok) {
      sqlite3_bind_text(st, 1, cutoff, -1, SQLITE_TRANSIENT);
      if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
      else *ok = false;
    }
    sqlite3_finalize(st);
    return n;
  };
  bool mce_ok = false, mc_ok = false;
  const long mce = count("SELECT count(*) FROM mce_record WHERE substr(timestamp, 1, 19) >= ?1", &mce_ok);
  const long ue = count("SELECT count(*) FROM mc_event WHERE substr(timestamp, 1, 19) >= ?1 AND "
                        "(err_type LIKE 'Uncorrected%' OR err_type LIKE 'Fatal%')", &mc_ok);
  sqlite3_close(db);
  if (!mce_ok && !mc_ok) return {"rasdaemon", "unavailable", path + ": no mce_record or mc_event table"};
  if (mce > 0 || ue > 0)
    return {"rasdaemon", "fail", fmt::format("rasdaemon recorded {} machine check(s) and {} uncorrected memory "
                                             "error(s) in {:.0f} h", mce, ue, opt.kernel_log_since_s / 3600)};
  return {"rasdaemon", "pass", fmt::format("rasdaemon recorded no machine check or uncorrected memory error in "
                                           "{:.0f} h", opt.kernel_log_since_s / 3600)};
}

namespace {

// Root reads NVML itself (the state only: events went to the job's scoutd).
CheckResult check_gpu() {
  common::GpuHealth nvml;
  if (!nvml.available()) return {"gpu", "unavailable", "no GPU health source on this node: " + nvml.why_unavailable()};
  std::vector<std::string> fatal;
  for (auto& f : nvml.state())
    if (f.fatal) fatal.push_back(fmt::format("GPU {} (index {}): {}", f.bus_id.empty() ? "?" : f.bus_id, f.index, f.detail));
  if (fatal.empty()) return {"gpu", "pass", "NVML read by root: no fatal condition on any GPU"};
  return {"gpu", "fail", fmt::format("NVML read by root: {}", fmt::join(fatal, "; "))};
}

}  // namespace

NodeCheck run_node_check(const NodeCheckOptions& opt, sql::Ledger* site) {
  NodeCheck c;
  c.checks.push_back(check_replay(opt, site));
  c.checks.push_back(check_d_state(opt));
  c.checks.push_back(check_kernel_log(opt));
  c.checks.push_back(check_edac());
  c.checks.push_back(check_rasdaemon(opt, opt.rasdaemon_db));
  c.checks.push_back(check_gpu());
  return c;
}

CheckResult reproduce_sdc(const NodeCheckOptions& opt, sql::Ledger* site, const std::string& recipe, int core,
                          long cycle) {
  auto r = replay::recipe_from_name(recipe);
  const std::vector<int> cores = replay::allowed_cpus();
  if (!r || core < 0 || std::find(cores.begin(), cores.end(), core) == cores.end())
    return {"reproduce", "unavailable",
            fmt::format("recipe '{}' on core {} cannot be re-run by root here", recipe.substr(0, 40), core)};
  const std::uint64_t seed = replay::cycle_seed(cycle);
  auto runs = run_on_cores(opt, cores, {*r}, cycle, seed);
  auto bad = compare_runs(runs, site, hex(seed ^ static_cast<std::uint64_t>(*r)), opt.node, core);
  if (!bad.empty()) return {"reproduce", "fail", "reproduced: " + bad.front()};
  return {"reproduce", "pass",
          fmt::format("not reproduced: {} on core {} with cycle {}'s seed agrees with the node's {} core(s){}", recipe,
                      core, cycle, cores.size(),
                      site && site->reference_signature(replay::cpu_class(core).key(), recipe,
                                                        hex(seed ^ static_cast<std::uint64_t>(*r)))
                          ? " and the site reference"
                          : "")};
}

}  // namespace scout::spank
