// What root checks itself before it acts on a verdict (the epilog; see
// "Trust model" in docs/architecture.md). A verdict is the job's user's
// word: scoutd runs as that user. Before a node is drained, root either
// reproduces the evidence or finds its own:
//   replay      every replay recipe on every core this process may use,
//               pinned, same seed on every core: a core whose signature
//               disagrees with the other cores of its CPU class, or a class
//               whose cores all disagree with the site's reference (root's
//               own clean runs on other nodes), fails the node;
//   d_state     processes in uninterruptible sleep (D) at two samples
//               `dstate_wait_s` apart, same pid and wchan both times, waits a
//               user can hold (vfork, pipes, futexes, FUSE) left out:
//               recorded as "corroborates", never a failure by itself (any
//               user can put a process of hers in D state);
//   kernel_log  kernel-facility records of /dev/kmsg since `since_s` ago
//               that start with a hardware anchor longer than a task name
//               (machine check, GPU Xid with its PCI address); text a
//               process can choose (its name at the start of a segfault or
//               OOM-killer line) never matches (see hardware_kernel_record);
//   edac        EDAC's sysfs counters (the kernel's memory-controller
//               drivers write them): an uncorrected error since boot fails;
//   rasdaemon   rasdaemon's database where present (root-owned): machine
//               checks and uncorrected memory errors since `since_s` ago;
//   gpu         GPU health read from NVML by root itself (the state: ECC,
//               row remapping, lost GPU, temperature); unavailable without NVML.
// reproduce_sdc re-runs the one recipe a replay verdict names on the core it
// names with the cycle's seed, and compares it with the node's other cores
// and the site's reference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sql/ledger.hpp"

namespace scout::spank {

struct CheckResult {
  std::string check;   // replay, d_state, kernel_log, gpu, reproduce
  std::string result;  // pass, fail, unavailable
  std::string detail;
};

struct NodeCheck {
  std::vector<CheckResult> checks;
  bool failed() const;
  std::string failures() const;  // "replay: core 3 ...; kernel_log: ..." (empty if none)
  nlohmann::json to_json() const;
};

struct NodeCheckOptions {
  std::string node;
  double dstate_wait_s = 2;
  double kernel_log_since_s = 86400;
  std::string rasdaemon_db = "/var/lib/rasdaemon/ras-mc_event.db";
  // Test-only (builds with --enable-fault-injection): bit flips applied to
  // root's replay runs, SCOUT_REPLAY_FAULT syntax, read from a root-owned file.
  std::string fault_file;
};

// Whether one /dev/kmsg record ("prio,seq,usec,flags;message") is a
// kernel-originated hardware error (exposed for tests).
bool hardware_kernel_record(const std::string& record);

// The kernel_log and rasdaemon checks alone (exposed for tests).
CheckResult check_kernel_log(const NodeCheckOptions& opt);
CheckResult check_rasdaemon(const NodeCheckOptions& opt, const std::string& path);

// The seed of root's node-check replay runs (not a cycle scoutd ever uses).
std::uint64_t node_check_seed() noexcept;

NodeCheck run_node_check(const NodeCheckOptions& opt, sql::Ledger* site);

// Re-runs `recipe` with `cycle`'s seed on `core` and on the node's other
// cores. result "fail" = reproduced (the core disagrees with its peers or
// with the site's reference), "pass" = not reproduced, "unavailable" = the
// verdict names no CPU recipe/core root can run (a GPU SM without a GPU
// backend, or collective outputs).
CheckResult reproduce_sdc(const NodeCheckOptions& opt, sql::Ledger* site, const std::string& recipe, int core,
                          long cycle);

}  // namespace scout::spank
