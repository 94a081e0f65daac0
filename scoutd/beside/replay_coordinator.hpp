// Replay consensus at the deciding observer: starts replay cycles (every
// interval, or on demand), compares each recipe's signatures across all
// equivalent devices of the job (same CPU class) by the exact rule, asks the
// node of a device that disagrees with a strict majority to re-run it K more
// times, and turns the outcome into verdicts: recurring -> sdc (attributed),
// not recurring -> transient (advisory), no strict majority -> sdc
// inconclusive naming nobody. Each decided cycle becomes a ledger row that
// checkpoint certification reads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "replay/runner.hpp"
#include "scoutd/detect/progress_detector.hpp"

namespace scout::replay {
void to_json(nlohmann::json& j, const DeviceResult& d);
void from_json(const nlohmann::json& j, DeviceResult& d);
void to_json(nlohmann::json& j, const Report& r);
void from_json(const nlohmann::json& j, Report& r);
}  // namespace scout::replay

namespace scout::scoutd {

// One device whose signature differs from the strict majority of its peers.
struct Dissent {
  int observer = -1;
  std::string node, device, recipe, cpu_class;
  int core = -1;
  std::uint64_t signature = 0, majority = 0;
  int agree = 0, devices = 0;  // peers with the majority value, devices compared
  int gpu = -1, sm = -1;       // a GPU SM
};

// A recipe and CPU class where no value has a strict majority.
struct NoMajority {
  std::string recipe, cpu_class;
  std::map<std::uint64_t, std::vector<std::string>> values;  // signature -> node:device
  int devices = 0;
};

struct Comparison {
  std::vector<Dissent> dissents;
  std::vector<NoMajority> no_majority;
  int devices = 0;            // distinct devices compared
  int unpaired = 0;           // results with no peer of the same class
};

// Exact comparison of one cycle's reports (observer -> report).
Comparison compare_cycle(const std::map<int, replay::Report>& reports);

struct CoordinatorOptions {
  double interval_s = 600;     // periodic cycles (0: on demand only)
  int reruns = 2;              // K
  double timeout_s = 300;      // a cycle or its re-runs not reported by then is decided without them
};

struct RerunRequest {
  int observer;
  long cycle;
  int core;
  std::string recipe;
  int times;
  std::string device;  // cpuN or gpuD/smS
};

class ReplayCoordinator {
 public:
  explicit ReplayCoordinator(CoordinatorOptions o) : opt_(o) {}
  // A cycle to start now (periodic or `demand`), or none while one runs.
  std::optional<long> want_start(double now_s, bool demand);
  // A cycle another (earlier) deciding observer started, seen on the down
  // message: a coordinator that takes over after a root change continues the
  // numbering and the period instead of reusing cycle ids.
  void observed_start(long id, double now_s);
  void on_report(int observer, const replay::Report& r);

  struct Step {
    std::vector<RerunRequest> reruns;
    std::vector<VerdictDraft> verdicts;      // hosts set; ranks filled by the caller
    std::vector<int> verdict_observers;      // observer per verdict (-1: none)
    std::optional<std::pair<long, nlohmann::json>> cycle_done;  // cycle id, its record
  };
  // `live`: observers expected to report. `now_ms`: Unix ms for the record.
  Step evaluate(double now_s, const std::set<int>& live, std::int64_t now_ms);
  bool running() const { return current_.has_value(); }

 private:
  struct Pending {
    Dissent d;
    std::vector<std::uint64_t> rerun_sigs;
    bool reported = false;
  };
  struct Cycle {
    long id = 0;
    double started_s = 0, compared_s = 0;
    std::map<int, replay::Report> reports;
    bool compared = false;
    Comparison cmp;
    std::vector<Pending> pending;
  };
  CoordinatorOptions opt_;
  std::optional<Cycle> current_;
  long next_id_ = 1;
  double last_start_s_ = -1;
};

}  // namespace scout::scoutd
