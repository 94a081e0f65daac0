// Stand-in for libnvidia-ml.so.1 (NVML), for tests on machines without a
// GPU. Nothing installed depends on it. The GPUs are the stand-in driver's
// (SCOUT_STANDIN_GPUS, default 8; bus ids 00000000:1X:00.0 in NVML's form).
// Health values are injected through the file named by SCOUT_STANDIN_NVML,
// re-read on every call, one GPU per line:
//   0000:12:00.0 ecc_uncorrected=2 remap_pending=1 remap_failure=1 xid=79,63
//                nvlink_crc=500 nvlink_replay=0 nvlink_recovery=1 temp=91
//                temp_shutdown=95 lost=1
//                util=90 power=400 sm_clock=1980 mem_used=40000 mem_total=141000
//                (telemetry: percent, watts, MHz, MiB)
// Every event set registered for a GPU receives each of its XIDs once (so a
// fresh process, root's epilog, sees them as a live driver reports a GPU
// that stays broken). Only the calls scout makes are provided.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nvmlReturn_t = int;
constexpr int kOk = 0, kInvalid = 2, kNotSupported = 3, kNotFound = 6, kTimeout = 10, kGpuLost = 15;
struct Dev {
  int index;
};
Dev g_devs[64];

int count() {
  const char* v = std::getenv("SCOUT_STANDIN_GPUS");
  int n = v ? std::atoi(v) : 8;
  return n < 0 ? 0 : n > 64 ? 64 : n;
}

struct Health {
  unsigned long long ecc = 0, crc = 0, replay = 0, recovery = 0;
  unsigned remap_pending = 0, remap_failure = 0, temp = 45, temp_shutdown = 95;
  unsigned util = 90, power_w = 400, sm_clock = 1980;
  unsigned long long mem_used = 40000, mem_total = 141000;  // MiB
  bool lost = false;
  std::vector<unsigned long long> xids;
};

// The injected values of GPU `index` (bus 0x10 + index).
Health health(int index) {
  Health h;
  const char* path = std::getenv("SCOUT_STANDIN_NVML");
  if (!path) return h;
  std::FILE* f = std::fopen(path, "r");
  if (!f) return h;
  char want[32];
  std::snprintf(want, sizeof want, "0000:%02x:00.0", 0x10 + index);
  char line[1024];
  while (std::fgets(line, sizeof line, f)) {
    std::istringstream in(line);
    std::string bus, kv;
    in >> bus;
    if (bus != want) continue;
    while (in >> kv) {
      auto eq = kv.find('=');
      if (eq == std::string::npos) continue;
      std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
      unsigned long long x = std::strtoull(v.c_str(), nullptr, 10);
      if (k == "ecc_uncorrected") h.ecc = x;
      else if (k == "remap_pending") h.remap_pending = static_cast<unsigned>(x);
      else if (k == "remap_failure") h.remap_failure = static_cast<unsigned>(x);
      else if (k == "nvlink_crc") h.crc = x;
      else if (k == "nvlink_replay") h.replay = x;
      else if (k == "nvlink_recovery") h.recovery = x;
      else if (k == "temp") h.temp = static_cast<unsigned>(x);
      else if (k == "temp_shutdown") h.temp_shutdown = static_cast<unsigned>(x);
      else if (k == "lost") h.lost = x != 0;
      else if (k == "util") h.util = static_cast<unsigned>(x);
      else if (k == "power") h.power_w = static_cast<unsigned>(x);
      else if (k == "sm_clock") h.sm_clock = static_cast<unsigned>(x);
      else if (k == "mem_used") h.mem_used = x;
      else if (k == "mem_total") h.mem_total = x;
      else if (k == "xid") {
        std::stringstream xs(v);
        std::string one;
        while (std::getline(xs, one, ',')) h.xids.push_back(std::strtoull(one.c_str(), nullptr, 10));
      }
    }
  }
  std::fclose(f);
  return h;
}

int index_of(void* dev) {
  for (int i = 0; i < 64; ++i)
    if (dev == &g_devs[i]) return i;
  return -1;
}

struct EventSet {
  std::set<int> devices;
  std::map<int, std::size_t> delivered;  // per device: XIDs delivered so far
};
std::mutex g_mu;

}  // namespace

struct PciInfo {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct EventData {
  void* device;
  unsigned long long eventType, eventData;
  unsigned gpuInstanceId, computeInstanceId;
};

#define EXPORT extern "C" __attribute__((visibility("default")))

EXPORT nvmlReturn_t nvmlInit_v2() { return kOk; }
EXPORT nvmlReturn_t nvmlShutdown() { return kOk; }
EXPORT const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kOk: return "Success";
    case kNotSupported: return "Not Supported";
    case kTimeout: return "Timeout";
    case kGpuLost: return "GPU is lost";
    default: return "Unknown Error";
  }
}
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* n) {
  if (!n) return kInvalid;
  *n = static_cast<unsigned>(count());
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, void** dev) {
  if (!dev || static_cast<int>(i) >= count()) return kInvalid;
  if (health(static_cast<int>(i)).lost) return kGpuLost;
  g_devs[i].index = static_cast<int>(i);
  *dev = &g_devs[i];
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(void* dev, PciInfo* p) {
  int i = index_of(dev);
  if (i < 0 || !p) return kInvalid;
  std::memset(p, 0, sizeof *p);
  p->bus = static_cast<unsigned>(0x10 + i);
  std::snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", (0x10 + i) & 0xff);
  std::snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", (0x10 + i) & 0xff);
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(void* dev, int type, int counter, unsigned long long* n) {
  int i = index_of(dev);
  if (i < 0 || !n) return kInvalid;
  Health h = health(i);
  if (h.lost) return kGpuLost;
  *n = (type == 1 && counter == 0) ? h.ecc : 0;
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(void* dev, unsigned* corr, unsigned* unc, unsigned* pending,
                                             unsigned* failure) {
  int i = index_of(dev);
  if (i < 0 || !corr || !unc || !pending || !failure) return kInvalid;
  Health h = health(i);
  if (h.lost) return kGpuLost;
  *corr = 0;
  *unc = h.remap_failure ? 1 : 0;
  *pending = h.remap_pending;
  *failure = h.remap_failure;
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(void* dev, unsigned link, int counter, unsigned long long* v) {
  int i = index_of(dev);
  if (i < 0 || !v) return kInvalid;
  if (link >= 4) return kInvalid;  // four links per stand-in GPU
  Health h = health(i);
  if (h.lost) return kGpuLost;
  // All of a GPU's errors on link 0.
  *v = link != 0 ? 0 : counter == 0 ? h.replay : counter == 1 ? h.recovery : counter == 2 ? h.crc : 0;
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceGetTemperature(void* dev, int sensor, unsigned* t) {
  int i = index_of(dev);
  if (i < 0 || !t || sensor != 0) return kInvalid;
  Health h = health(i);
  if (h.lost) return kGpuLost;
  *t = h.temp;
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(void* dev, unsigned* u) {  // nvmlUtilization_t
  int i = index_of(dev);
  if (i < 0 || !u) return kInvalid;
  Health h = health(i);
  if (h.lost) return kGpuLost;
  u[0] = h.util;
  u[1] = h.util / 2;
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(void* dev, unsigned* mw) {
  int i = index_of(dev);
  if (i < 0 || !mw) return kInvalid;
  Health h = health(i);
  if (h.lost) return kGpuLost;
  *mw = h.power_w * 1000;
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(void* dev, int type, unsigned* mhz) {
  int i = index_of(dev);
  if (i < 0 || !mhz) return kInvalid;
  if (type != 1) return kNotSupported;  // only NVML_CLOCK_SM
  Health h = health(i);
  if (h.lost) return kGpuLost;
  *mhz = h.sm_clock;
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(void* dev, unsigned long long* m) {  // nvmlMemory_t {total, free, used}
  int i = index_of(dev);
  if (i < 0 || !m) return kInvalid;
  Health h = health(i);
  if (h.lost) return kGpuLost;
  m[0] = h.mem_total << 20;
  m[2] = std::min(h.mem_used, h.mem_total) << 20;
  m[1] = m[0] - m[2];
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(void* dev, int which, unsigned* t) {
  int i = index_of(dev);
  if (i < 0 || !t) return kInvalid;
  if (which != 0) return kNotSupported;
  *t = health(i).temp_shutdown;
  return kOk;
}
EXPORT nvmlReturn_t nvmlEventSetCreate(void** set) {
  if (!set) return kInvalid;
  *set = new EventSet;
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(void* dev, unsigned long long types, void* set) {
  int i = index_of(dev);
  if (i < 0 || !set) return kInvalid;
  if (!(types & 0x8)) return kNotSupported;
  std::lock_guard lk(g_mu);
  static_cast<EventSet*>(set)->devices.insert(i);
  return kOk;
}
EXPORT nvmlReturn_t nvmlEventSetWait_v2(void* set, EventData* data, unsigned /*timeout_ms*/) {
  if (!set || !data) return kInvalid;
  auto* s = static_cast<EventSet*>(set);
  std::lock_guard lk(g_mu);
  for (int i : s->devices) {
    Health h = health(i);
    std::size_t& n = s->delivered[i];
    if (n < h.xids.size()) {
      std::memset(data, 0, sizeof *data);
      data->device = &g_devs[i];
      data->eventType = 0x8;
      data->eventData = h.xids[n++];
      return kOk;
    }
  }
  return kTimeout;
}
EXPORT nvmlReturn_t nvmlEventSetFree(void* set) {
  delete static_cast<EventSet*>(set);
  return kOk;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char*, void**) { return kNotFound; }
