// Telemetry features (see telemetry.hpp).
#include "scoutd/observe/telemetry.hpp"

#include "common/proc_info.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace scout::scoutd {

const char* const kTelemetryFeatureNames[kTelemetryFeatures] = {
    "step_time", "compute_fraction", "wait_fraction", "collective_rate", "cpu_utilisation",
    "rss", "voluntary_cs_rate", "involuntary_cs_rate", "read_rate", "write_rate",
    "psi_cpu", "psi_io", "psi_memory",
    "gpu_utilisation", "gpu_power", "gpu_temperature", "gpu_sm_clock", "gpu_memory_used"};

ProcCounters read_proc_counters(int pid) {
  ProcCounters c;
  const std::string base = "/proc/" + std::to_string(pid);
  {
    const std::string fields = common::proc_stat_fields(pid);
    if (fields.empty()) return c;
    std::istringstream f(fields);
    std::string tok;
    std::vector<std::string> v;
    while (f >> tok) v.push_back(tok);
    if (v.size() < 22) return c;
    const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    c.cpu_s = (std::atof(v[11].c_str()) + std::atof(v[12].c_str())) / hz;  // utime, stime
    c.rss_mb = std::atof(v[21].c_str()) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1048576.0;
  }
  {
    std::ifstream in(base + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) c.vol_cs = std::atof(line.c_str() + 24);
      if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) c.invol_cs = std::atof(line.c_str() + 27);
    }
  }
  {
    std::ifstream in(base + "/io");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("rchar:", 0) == 0) c.rchar = std::atof(line.c_str() + 6);
      if (line.rfind("wchar:", 0) == 0) c.wchar = std::atof(line.c_str() + 6);
    }
  }
  c.ok = true;
  return c;
}

Pressure read_pressure() {
  Pressure p;
  auto some_avg10 = [](const char* path) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("some", 0) == 0) {
        auto k = line.find("avg10=");
        if (k != std::string::npos) return std::atof(line.c_str() + k + 6);
      }
    return 0.0;
  };
  p.cpu = some_avg10("/proc/pressure/cpu");
  p.io = some_avg10("/proc/pressure/io");
  p.memory = some_avg10("/proc/pressure/memory");
  return p;
}

std::vector<TelemetryWindow> TelemetrySampler::sample(const std::vector<RankEvidence>& ranks, double now_s,
                                                      const std::vector<common::GpuTelemetry>& gpus) {
  std::vector<TelemetryWindow> out;
  const Pressure psi = read_pressure();
  std::map<std::string, const common::GpuTelemetry*> gpu_at;
  for (auto& g : gpus)
    if (auto b = common::normalise_bus_id(g.bus_id); !b.empty()) gpu_at[b] = &g;
  std::map<int, Prev> next;
  for (auto& e : ranks) {
    if (!e.attached || !e.alive || e.finalized || e.pid <= 0 || e.steps < 4) continue;  // no steps yet: start-up
    Prev cur;
    cur.c = read_proc_counters(e.pid);
    cur.seq = e.seq;
    cur.t = now_s;
    if (!cur.c.ok) continue;
    auto it = prev_.find(e.rank);
    cur.windows = it != prev_.end() ? it->second.windows + 1 : 1;
    constexpr int kStartupWindows = 4;
    if (it != prev_.end() && now_s > it->second.t && cur.windows > kStartupWindows) {
      const Prev& p = it->second;
      const double dt = now_s - p.t;
      auto rate = [&](double a, double b) { return std::log1p(std::max(0.0, a - b) / dt); };
      const double step = e.step_s > 0 ? e.step_s : 0;
      TelemetryWindow w;
      w.rank = e.rank;
      w.node = e.node;
      w.x = {std::log1p(step * 1e3),
             step > 0 ? std::clamp(e.compute_s / step, 0.0, 1.0) : 0.0,
             step > 0 ? std::clamp(e.wait_s / step, 0.0, 1.0) : 0.0,
             rate(static_cast<double>(e.seq), static_cast<double>(p.seq)),
             std::clamp((cur.c.cpu_s - p.c.cpu_s) / dt, 0.0, 64.0),
             std::log1p(cur.c.rss_mb),
             rate(cur.c.vol_cs, p.c.vol_cs),
             rate(cur.c.invol_cs, p.c.invol_cs),
             rate(cur.c.rchar, p.c.rchar) / 10.0,
             rate(cur.c.wchar, p.c.wchar) / 10.0,
             psi.cpu / 100.0,
             psi.io / 100.0,
             psi.memory / 100.0};
      // The GPU's: utilisation and memory use as fractions, log power (W),
      // temperature / 100 C, SM clock in GHz; 0 where unknown.
      const common::GpuTelemetry* g = nullptr;
      if (e.gpu.present)
        if (auto it = gpu_at.find(common::normalise_bus_id(e.gpu.bus_id)); it != gpu_at.end()) g = it->second;
      auto known = [](double v, double f) { return v >= 0 ? f : 0.0; };
      w.x.push_back(g ? known(g->utilisation, std::clamp(g->utilisation, 0.0, 1.0)) : 0.0);
      w.x.push_back(g ? known(g->power_w, std::log1p(g->power_w)) : 0.0);
      w.x.push_back(g ? known(g->temperature_c, g->temperature_c / 100.0) : 0.0);
      w.x.push_back(g ? known(g->sm_clock_mhz, g->sm_clock_mhz / 1000.0) : 0.0);
      w.x.push_back(g ? known(g->memory_used, std::clamp(g->memory_used, 0.0, 1.0)) : 0.0);
      out.push_back(std::move(w));
    }
    next[e.rank] = cur;
  }
  prev_ = std::move(next);
  return out;
}

}  // namespace scout::scoutd
