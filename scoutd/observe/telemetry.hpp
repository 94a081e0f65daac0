// Node telemetry for the federated outlier detector: one feature vector per
// rank and window (e.g. 10 s), from the probe's records (step time, compute
// and wait split, collective rate) and /proc (CPU, RSS, context switches,
// I/O rates, and the node's pressure stall information when present), and
// for a GPU rank its GPU's utilisation, power, temperature, SM clock and
// memory use from NVML (zeros for a CPU rank or without NVML).
// Rates and sizes are log1p-compressed so one scale fits all nodes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/gpu_health.hpp"
#include "scoutd/detect/progress_detector.hpp"

namespace scout::scoutd {

inline constexpr int kTelemetryFeatures = 18;
extern const char* const kTelemetryFeatureNames[kTelemetryFeatures];

struct ProcCounters {
  bool ok = false;
  double cpu_s = 0;          // utime + stime
  double rss_mb = 0;
  double vol_cs = 0, invol_cs = 0;
  double rchar = 0, wchar = 0;
};
ProcCounters read_proc_counters(int pid);

struct Pressure {
  double cpu = 0, io = 0, memory = 0;  // "some avg10", percent; 0 when absent
};
Pressure read_pressure();

struct TelemetryWindow {
  int rank = -1;
  std::string node;
  std::vector<double> x;  // kTelemetryFeatures values
};

class TelemetrySampler {
 public:
  // Call once per window with the current evidence of the local ranks;
  // returns a window per live rank seen in the previous call too. `gpus`:
  // what NVML reads now (a GPU rank is matched by its PCI bus id).
  std::vector<TelemetryWindow> sample(const std::vector<RankEvidence>& ranks, double now_s,
                                      const std::vector<common::GpuTelemetry>& gpus = {});

 private:
  struct Prev {
    ProcCounters c;
    std::uint64_t seq = 0;
    double t = 0;
    int windows = 0;  // seen so far: the first few are start-up, not telemetry
  };
  std::map<int, Prev> prev_;
};

}  // namespace scout::scoutd
