// Reads this machine's GPU health through scout's NVML reader (read-only,
// as scoutd and root's epilog do) and prints what it found: for
// scripts/gpu-check on a machine with an NVIDIA driver, and against the
// stand-in libnvidia-ml.so.1 in tests. Then the telemetry the federated
// learner reads (utilisation, power, temperature, SM clock, memory use).
// Exit 0 when NVML answered (findings or not) and every GPU gave plausible
// telemetry, 1 when NVML could not be used or a GPU's telemetry is missing or
// out of range (a wrong struct layout or symbol shows up here).
#include <cstdio>

#include "common/gpu_health.hpp"

int main() {
  scout::common::GpuHealth h;
  if (!h.available()) {
    std::printf("NVML unavailable: %s\n", h.why_unavailable().c_str());
    return 1;
  }
  auto found = h.poll();
  std::printf("NVML: %zu finding(s)\n", found.size());
  for (auto& f : found)
    std::printf("  GPU %s (index %d): %s = %g, %s: %s\n", f.bus_id.c_str(), f.index, f.metric.c_str(), f.value,
                f.fatal ? "fatal" : "warning", f.detail.c_str());
  int rc = 0;
  auto tel = h.telemetry();
  std::printf("NVML telemetry: %zu GPU(s)\n", tel.size());
  if (tel.empty()) rc = 1;
  for (auto& t : tel) {
    const bool ok = t.utilisation >= 0 && t.utilisation <= 1 && t.power_w > 0 && t.power_w < 5000 &&
                    t.temperature_c > 0 && t.temperature_c < 150 && t.sm_clock_mhz > 0 && t.sm_clock_mhz < 10000 &&
                    t.memory_used >= 0 && t.memory_used <= 1;
    std::printf("  GPU %s: utilisation %.2f, power %.1f W, %.0f C, SM clock %.0f MHz, memory used %.3f%s\n",
                t.bus_id.c_str(), t.utilisation, t.power_w, t.temperature_c, t.sm_clock_mhz, t.memory_used,
                ok ? "" : "  <- implausible");
    if (!ok) rc = 1;
  }
  return rc;
}
