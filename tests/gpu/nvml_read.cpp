// Reads this machine's GPU health through scout's NVML reader (read-only,
// as scoutd and root's epilog do) and prints what it found: for
// scripts/gpu-check on a machine with an NVIDIA driver, and against the
// stand-in libnvidia-ml.so.1 in tests. Exit 0 when NVML answered (findings
// or not), 1 when it could not be used.
#include <cstdio>

#include "libc3/gpu_health.hpp"

int main() {
  scout::c3::GpuHealth h;
  if (!h.available()) {
    std::printf("NVML unavailable: %s\n", h.why_unavailable().c_str());
    return 1;
  }
  auto found = h.poll();
  std::printf("NVML: %zu finding(s)\n", found.size());
  for (auto& f : found)
    std::printf("  GPU %s (index %d): %s = %g, %s: %s\n", f.bus_id.c_str(), f.index, f.metric.c_str(), f.value,
                f.fatal ? "fatal" : "warning", f.detail.c_str());
  return 0;
}
