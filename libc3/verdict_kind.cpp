// The verdict kinds and statuses (see verdict_kind.hpp).
#include "libc3/verdict_kind.hpp"

#include <iterator>
#include <string>
#include <vector>

namespace scout::c3 {

namespace {
// The one table of kinds: name, the evidence root needs to act on it, and
// whether the epilog drains on it by default (drain_kinds).
struct KindRow {
  VerdictKind kind;
  const char* name;
  EvidenceClass evidence;
  bool drain_default;
};
constexpr KindRow kKinds[] = {
    {VerdictKind::kHang, "hang", EvidenceClass::kSuspect, false},
    {VerdictKind::kStall, "stall", EvidenceClass::kSuspect, true},
    {VerdictKind::kCrash, "crash", EvidenceClass::kSuspect, true},
    {VerdictKind::kDivergence, "divergence", EvidenceClass::kSuspect, false},
    {VerdictKind::kStraggler, "straggler", EvidenceClass::kNone, false},
    {VerdictKind::kSdc, "sdc", EvidenceClass::kReproduce, true},
    {VerdictKind::kObserverLost, "observer_lost", EvidenceClass::kNone, false},
    {VerdictKind::kTelemetryAnomaly, "telemetry_anomaly", EvidenceClass::kNone, false},
    {VerdictKind::kTransient, "transient", EvidenceClass::kNone, false},
    {VerdictKind::kAbort, "abort", EvidenceClass::kNone, false},
    {VerdictKind::kDeadlock, "deadlock", EvidenceClass::kNone, false},
    {VerdictKind::kGpuHang, "gpu_hang", EvidenceClass::kSuspect, true},
    {VerdictKind::kGpuHealth, "gpu_health", EvidenceClass::kSuspect, true},
};
static_assert(std::size(kKinds) == kAllVerdictKinds.size(), "every verdict kind has a row");

const KindRow* row(VerdictKind k) noexcept {
  for (auto& r : kKinds)
    if (r.kind == k) return &r;
  return nullptr;
}
}  // namespace

const char* to_string(VerdictKind k) noexcept {
  const KindRow* r = row(k);
  return r ? r->name : "?";
}

EvidenceClass evidence_class(VerdictKind k) noexcept {
  const KindRow* r = row(k);
  return r ? r->evidence : EvidenceClass::kNone;
}

const char* to_string(EvidenceClass c) noexcept {
  switch (c) {
    case EvidenceClass::kNone: return "none";
    case EvidenceClass::kReproduce: return "reproduce";
    case EvidenceClass::kSuspect: return "suspect";
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

bool drainable(VerdictKind k) noexcept { return evidence_class(k) != EvidenceClass::kNone; }

std::vector<std::string> default_drain_kinds() {
  std::vector<std::string> out;
  for (auto& r : kKinds)
    if (r.drain_default) out.push_back(r.name);
  return out;
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
