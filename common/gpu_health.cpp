// GPU health from NVML (see gpu_health.hpp).
#include "common/gpu_health.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cstdio>
#include <cstring>

namespace scout::common {

namespace {
using ret_t = int;
constexpr ret_t kOk = 0, kTimeout = 10, kGpuLost = 15;
using dev_t_ = void*;
using set_t = void*;
struct PciInfo {  // nvmlPciInfo_t (v3)
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct EventData {  // nvmlEventData_t
  dev_t_ device;
  unsigned long long eventType, eventData;
  unsigned gpuInstanceId, computeInstanceId;
};
constexpr unsigned long long kEventXid = 0x8;  // nvmlEventTypeXidCriticalError
constexpr unsigned kNvLinks = 18;              // NVML_NVLINK_MAX_LINKS
}  // namespace

struct GpuHealth::Nvml {
  void* h = nullptr;
  ret_t (*init)() = nullptr;
  ret_t (*shutdown)() = nullptr;
  ret_t (*count)(unsigned*) = nullptr;
  ret_t (*by_index)(unsigned, dev_t_*) = nullptr;
  ret_t (*pci)(dev_t_, PciInfo*) = nullptr;
  ret_t (*ecc)(dev_t_, int, int, unsigned long long*) = nullptr;
  ret_t (*remap)(dev_t_, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  ret_t (*temp)(dev_t_, int, unsigned*) = nullptr;
  ret_t (*temp_threshold)(dev_t_, int, unsigned*) = nullptr;
  ret_t (*nvlink)(dev_t_, unsigned, int, unsigned long long*) = nullptr;
  ret_t (*set_create)(set_t*) = nullptr;
  ret_t (*register_events)(dev_t_, unsigned long long, set_t) = nullptr;
  ret_t (*set_wait)(set_t, EventData*, unsigned) = nullptr;
  ret_t (*set_free)(set_t) = nullptr;
  // Telemetry (optional).
  ret_t (*utilization)(dev_t_, unsigned*) = nullptr;  // nvmlUtilization_t {gpu, memory}
  ret_t (*power)(dev_t_, unsigned*) = nullptr;        // milliwatts
  ret_t (*clock)(dev_t_, int, unsigned*) = nullptr;   // MHz
  ret_t (*memory)(dev_t_, unsigned long long*) = nullptr;  // nvmlMemory_t {total, free, used}
  set_t events = nullptr;
  std::map<dev_t_, int> registered;  // devices in the event set -> index
};

std::string normalise_bus_id(const std::string& s) {
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) == 4) {
  } else if (std::sscanf(s.c_str(), "%x:%x.%x%c", &bus, &dev, &fn, &tail) == 3) {
    dom = 0;
  } else {
    return "";
  }
  if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7) return "";
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
  return out;
}

int xid_severity(unsigned long long xid) noexcept {
  switch (xid) {
    case 48: case 64: case 74: case 79: case 95: case 119: case 120: case 140: return 2;
    case 63: case 92: case 94: return 1;
    default: return 0;
  }
}

GpuHealth::GpuHealth() {
  auto n = std::make_unique<Nvml>();
  n->h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!n->h) {
    why_ = "libnvidia-ml.so.1 not found (no NVIDIA driver on this node)";
    return;
  }
  auto sym = [&](auto& f, const char* name) {
    f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(n->h, name));
    return f != nullptr;
  };
  if (!(sym(n->init, "nvmlInit_v2") && sym(n->shutdown, "nvmlShutdown") && sym(n->count, "nvmlDeviceGetCount_v2") &&
        sym(n->by_index, "nvmlDeviceGetHandleByIndex_v2") && sym(n->pci, "nvmlDeviceGetPciInfo_v3") &&
        sym(n->ecc, "nvmlDeviceGetTotalEccErrors") && sym(n->remap, "nvmlDeviceGetRemappedRows") &&
        sym(n->temp, "nvmlDeviceGetTemperature") && sym(n->temp_threshold, "nvmlDeviceGetTemperatureThreshold") &&
        sym(n->nvlink, "nvmlDeviceGetNvLinkErrorCounter") && sym(n->set_create, "nvmlEventSetCreate") &&
        sym(n->register_events, "nvmlDeviceRegisterEvents") && sym(n->set_wait, "nvmlEventSetWait_v2") &&
        sym(n->set_free, "nvmlEventSetFree"))) {
    why_ = "libnvidia-ml.so.1 lacks a call scout needs (driver too old)";
    dlclose(n->h);
    return;
  }
  sym(n->utilization, "nvmlDeviceGetUtilizationRates");
  sym(n->power, "nvmlDeviceGetPowerUsage");
  sym(n->clock, "nvmlDeviceGetClockInfo");
  sym(n->memory, "nvmlDeviceGetMemoryInfo");
  if (ret_t r = n->init(); r != kOk) {
    why_ = "nvmlInit failed with NVML error " + std::to_string(r);
    dlclose(n->h);
    return;
  }
  if (n->set_create(&n->events) != kOk) n->events = nullptr;  // XIDs unavailable; the rest still works
  nvml_ = std::move(n);
  state();  // learns every GPU's bus id and registers for its XIDs while it answers
}

GpuHealth::~GpuHealth() {
  if (!nvml_) return;
  if (nvml_->events) nvml_->set_free(nvml_->events);
  nvml_->shutdown();
  dlclose(nvml_->h);
}

std::vector<GpuFinding> GpuHealth::state() {
  std::vector<GpuFinding> out;
  if (!nvml_) return out;
  Nvml& n = *nvml_;
  unsigned count = 0;
  if (n.count(&count) != kOk) return out;
  for (unsigned i = 0; i < count && i < 64; ++i) {
    dev_t_ d = nullptr;
    ret_t r = n.by_index(i, &d);
    std::string bus;
    PciInfo p{};
    if (r == kOk && n.pci(d, &p) == kOk) {
      bus = normalise_bus_id(std::string(p.busId, strnlen(p.busId, sizeof p.busId)));
      bus_of_[static_cast<int>(i)] = bus;
    } else if (auto it = bus_of_.find(static_cast<int>(i)); it != bus_of_.end()) {
      bus = it->second;  // lost since: named by what it answered before
    }
    auto add = [&](const char* metric, double value, bool fatal, std::string detail) {
      out.push_back({bus, static_cast<int>(i), metric, value, fatal, std::move(detail)});
    };
    if (r == kGpuLost) {
      add("gpu_lost", 1, true, "NVML reports the GPU lost (fallen off the bus)");
      continue;
    }
    if (r != kOk) continue;
    if (n.events && !n.registered.count(d) && n.register_events(d, kEventXid, n.events) == kOk)
      n.registered[d] = static_cast<int>(i);
    unsigned long long ecc = 0;
    r = n.ecc(d, 1, 0, &ecc);  // uncorrected, volatile
    if (r == kGpuLost) {
      add("gpu_lost", 1, true, "NVML reports the GPU lost (fallen off the bus)");
      continue;
    }
    if (r == kOk && ecc > 0) add("ecc_uncorrected", static_cast<double>(ecc), true, std::to_string(ecc) + " uncorrectable ECC errors since the driver loaded");
    unsigned corr = 0, unc = 0, pending = 0, failure = 0;
    if (n.remap(d, &corr, &unc, &pending, &failure) == kOk) {
      if (failure) add("remap_failure", failure, true, "a row remapping failed (no spare rows)");
      else if (pending) add("remap_pending", pending, false, "row remaps pending (the GPU needs a reset)");
    }
    unsigned t = 0, shut = 0;
    if (n.temp(d, 0, &t) == kOk && n.temp_threshold(d, 0, &shut) == kOk && shut > 0) {
      if (t >= shut) add("temperature", t, true, "at " + std::to_string(t) + " C, its shutdown threshold is " + std::to_string(shut) + " C");
      else if (t + 5 >= shut) add("temperature", t, false, "at " + std::to_string(t) + " C, within 5 C of shutdown (" + std::to_string(shut) + " C)");
    }
  }
  return out;
}

std::vector<GpuTelemetry> GpuHealth::telemetry() {
  std::vector<GpuTelemetry> out;
  if (!nvml_) return out;
  Nvml& n = *nvml_;
  unsigned count = 0;
  if (n.count(&count) != kOk) return out;
  constexpr int kClockSm = 1;  // NVML_CLOCK_SM
  for (unsigned i = 0; i < count && i < 64; ++i) {
    dev_t_ d = nullptr;
    PciInfo p{};
    if (n.by_index(i, &d) != kOk || n.pci(d, &p) != kOk) continue;
    GpuTelemetry t;
    t.bus_id = normalise_bus_id(std::string(p.busId, strnlen(p.busId, sizeof p.busId)));
    unsigned u[2] = {0, 0}, v = 0;
    if (n.utilization && n.utilization(d, u) == kOk && u[0] <= 100) t.utilisation = u[0] / 100.0;
    if (n.power && n.power(d, &v) == kOk) t.power_w = v / 1000.0;
    if (n.temp(d, 0, &v) == kOk) t.temperature_c = v;
    if (n.clock && n.clock(d, kClockSm, &v) == kOk) t.sm_clock_mhz = v;
    unsigned long long m[3] = {0, 0, 0};
    if (n.memory && n.memory(d, m) == kOk && m[0] > 0 && m[2] <= m[0]) t.memory_used = static_cast<double>(m[2]) / static_cast<double>(m[0]);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<GpuFinding> GpuHealth::poll() {
  std::vector<GpuFinding> out = state();
  if (!nvml_) return out;
  Nvml& n = *nvml_;
  // XIDs since the previous poll.
  if (n.events) {
    EventData e{};
    for (int k = 0; k < 256 && n.set_wait(n.events, &e, 0) == kOk; ++k) {
      if (!(e.eventType & kEventXid)) continue;
      const int sev = xid_severity(e.eventData);
      if (sev == 0) continue;
      auto it = n.registered.find(e.device);
      GpuFinding f;
      f.index = it == n.registered.end() ? -1 : it->second;
      PciInfo p{};
      if (e.device && n.pci(e.device, &p) == kOk) f.bus_id = normalise_bus_id(std::string(p.busId, strnlen(p.busId, sizeof p.busId)));
      f.metric = "xid";
      f.value = static_cast<double>(e.eventData);
      f.fatal = sev == 2;
      f.detail = "XID " + std::to_string(e.eventData) + (sev == 2 ? " (fatal)" : " (warning)");
      out.push_back(std::move(f));
    }
  }
  // NVLink counter growth since the previous poll.
  unsigned count = 0;
  if (n.count(&count) != kOk) return out;
  for (unsigned i = 0; i < count && i < 64; ++i) {
    dev_t_ d = nullptr;
    PciInfo p{};
    if (n.by_index(i, &d) != kOk || n.pci(d, &p) != kOk) continue;
    const std::string bus = normalise_bus_id(std::string(p.busId, strnlen(p.busId, sizeof p.busId)));
    static const struct {
      int counter;
      const char* metric;
      unsigned long long warn;
    } kCounters[] = {{0, "nvlink_replay", 100}, {1, "nvlink_recovery", 1}, {2, "nvlink_crc", 100}};
    for (auto& c : kCounters) {
      unsigned long long total = 0;
      bool any = false;
      for (unsigned link = 0; link < kNvLinks; ++link) {
        unsigned long long v = 0;
        if (n.nvlink(d, link, c.counter, &v) == kOk) total += v, any = true;
      }
      if (!any) continue;
      const std::string key = bus + ":" + c.metric;
      auto it = last_.find(key);
      if (it != last_.end() && total >= it->second + c.warn)
        out.push_back({bus, static_cast<int>(i), c.metric, static_cast<double>(total - it->second), false,
                       std::to_string(total - it->second) + " " + c.metric + " errors since the previous poll"});
      last_[key] = total;
    }
  }
  return out;
}

}  // namespace scout::common
