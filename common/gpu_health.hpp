// GPU health read directly from NVML, loaded with dlopen("libnvidia-ml.so.1")
// (no NVIDIA header or library at build time: the few calls and types are
// declared here). Used by scoutd (polls every few seconds, verdicts) and by
// root's epilog (re-reads the state before it drains a node). What counts,
// as data-center health checks use it:
//   fatal    uncorrectable ECC errors (volatile), a row-remapping failure,
//            XID 48, 64, 74, 79, 95, 119, 120, 140, the GPU lost, the
//            temperature at its shutdown threshold;
//   warning  pending row remaps, XID 63, 92, 94, NVLink CRC/replay error
//            growth (>= 100 between polls) or any recovery, the temperature
//            within 5 C of shutdown.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace scout::common {

struct GpuFinding {
  std::string bus_id;  // normalised "0000:17:00.0" (CUDA's form)
  int index = -1;      // NVML index
  std::string metric;  // ecc_uncorrected, remap_failure, remap_pending, xid, gpu_lost, nvlink_crc, ...
  double value = 0;
  bool fatal = false;
  std::string detail;  // one line for people
};

// What a GPU is doing now (telemetry for the federated detector); a field
// NVML does not answer stays negative.
struct GpuTelemetry {
  std::string bus_id;
  double utilisation = -1;  // fraction of the last sample period a kernel ran, 0..1
  double power_w = -1;
  double temperature_c = -1;
  double sm_clock_mhz = -1;
  double memory_used = -1;  // fraction of the GPU's memory in use, 0..1
};

// "00000000:17:00.0", "0000:17:00.0", "17:00.0" -> "0000:17:00.0" (lower
// case); empty when it is not a PCI address.
std::string normalise_bus_id(const std::string& s);
// Classification of an XID: 2 fatal, 1 warning, 0 neither.
int xid_severity(unsigned long long xid) noexcept;

class GpuHealth {
 public:
  GpuHealth();  // loads NVML; available() says whether it worked
  ~GpuHealth();
  GpuHealth(const GpuHealth&) = delete;
  GpuHealth& operator=(const GpuHealth&) = delete;
  bool available() const noexcept { return nvml_ != nullptr; }
  const std::string& why_unavailable() const noexcept { return why_; }
  // One poll of every GPU: the problems present now (state), and the XIDs
  // and counter growth since the previous poll.
  std::vector<GpuFinding> poll();
  // The state only (no events, no growth): what root re-reads.
  std::vector<GpuFinding> state();
  // Utilisation, power, temperature, SM clock and memory use of every GPU
  // that answers (the calls are optional: an old driver leaves them -1).
  std::vector<GpuTelemetry> telemetry();

 private:
  struct Nvml;
  std::unique_ptr<Nvml> nvml_;
  std::string why_;
  std::map<std::string, unsigned long long> last_;  // bus:counter -> value at the previous poll
  std::map<int, std::string> bus_of_;  // index -> bus id, as last read (a lost GPU has none to read)
};

}  // namespace scout::common
