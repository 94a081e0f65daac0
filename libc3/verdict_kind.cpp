// The verdict kinds and statuses (see verdict_kind.hpp).
#include "libc3/verdict_kind.hpp"

#include <iterator>

namespace scout::c3 {

namespace {
// The one table of kinds: name and the evidence root needs to act on it.
struct KindRow {
  VerdictKind kind;
  const char* name;
  EvidenceClass evidence;
};
constexpr KindRow kKinds[] = {
    {VerdictKind::kHang, "hang", EvidenceClass::kSuspect},
    {VerdictKind::kStall, "stall", EvidenceClass::kSuspect},
    {VerdictKind::kCrash, "crash", EvidenceClass::kSuspect},
    {VerdictKind::kDivergence, "divergence", EvidenceClass::kSuspect},
    {VerdictKind::kStraggler, "straggler", EvidenceClass::kNone},
    {VerdictKind::kSdc, "sdc", EvidenceClass::kReproduce},
    {VerdictKind::kObserverLost, "observer_lost", EvidenceClass::kNone},
    {VerdictKind::kTelemetryAnomaly, "telemetry_anomaly", EvidenceClass::kNone},
    {VerdictKind::kTransient, "transient", EvidenceClass::kNone},
    {VerdictKind::kAbort, "abort", EvidenceClass::kNone},
    {VerdictKind::kDeadlock, "deadlock", EvidenceClass::kNone},
    {VerdictKind::kGpuHang, "gpu_hang", EvidenceClass::kSuspect},
    {VerdictKind::kGpuHealth, "gpu_health", EvidenceClass::kSuspect},
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
