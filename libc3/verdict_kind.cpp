// The verdict kinds and statuses (see verdict_kind.hpp).
#include "libc3/verdict_kind.hpp"

namespace scout::c3 {

const char* to_string(VerdictKind k) noexcept {
  switch (k) {
    case VerdictKind::kHang: return "hang";
    case VerdictKind::kStall: return "stall";
    case VerdictKind::kCrash: return "crash";
    case VerdictKind::kDivergence: return "divergence";
    case VerdictKind::kStraggler: return "straggler";
    case VerdictKind::kSdc: return "sdc";
    case VerdictKind::kObserverLost: return "observer_lost";
    case VerdictKind::kTelemetryAnomaly: return "telemetry_anomaly";
    case VerdictKind::kTransient: return "transient";
    case VerdictKind::kAbort: return "abort";
    case VerdictKind::kDeadlock: return "deadlock";
    case VerdictKind::kGpuHang: return "gpu_hang";
    case VerdictKind::kGpuHealth: return "gpu_health";
  }
  return "?";
}

const char* to_string(VerdictStatus s) noexcept {
  switch (s) {
    case VerdictStatus::kAttributed: return "attributed";
    case VerdictStatus::kInconclusive: return "inconclusive";
    case VerdictStatus::kAdvisory: return "advisory";
  }
  return "?";
}

std::optional<VerdictKind> verdict_kind_from(std::string_view name) noexcept {
  for (auto k : kAllVerdictKinds)
    if (name == to_string(k)) return k;
  return std::nullopt;
}

std::optional<VerdictStatus> verdict_status_from(std::string_view name) noexcept {
  for (auto s : kAllVerdictStatuses)
    if (name == to_string(s)) return s;
  return std::nullopt;
}

bool drainable(VerdictKind k) noexcept {
  switch (k) {
    case VerdictKind::kStall:
    case VerdictKind::kCrash:
    case VerdictKind::kSdc:
    case VerdictKind::kHang:
    case VerdictKind::kDivergence:
    case VerdictKind::kGpuHang:
    case VerdictKind::kGpuHealth: return true;
    default: return false;
  }
}

std::string drainable_kinds_text() {
  std::string out;
  std::size_t n = 0, total = 0;
  for (auto k : kAllVerdictKinds) total += drainable(k);
  for (auto k : kAllVerdictKinds) {
    if (!drainable(k)) continue;
    if (n) out += ++n == total ? " or " : ", ";
    else ++n;
    out += to_string(k);
  }
  return out;
}

std::string verdict_kinds_sql_list() {
  std::string out;
  for (auto k : kAllVerdictKinds) {
    if (!out.empty()) out += ",";
    out += "'";
    out += to_string(k);
    out += "'";
  }
  return out;
}

}  // namespace scout::c3
