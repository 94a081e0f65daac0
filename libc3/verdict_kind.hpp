// The one list of verdict kinds and statuses. The detectors draft them, the
// ledger's CHECK constraint admits them (a unit test compares the two), the
// plugstack keys drain_kinds/prolog_kinds parse them and scoutctl prints
// them: all through this header. Pure data, no I/O.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scout::c3 {

enum class VerdictKind {
  kHang,              // progress stopped; the culprit is behind the majority
  kStall,             // the culprit's process is stopped, in D state or gone
  kCrash,             // a rank died first while its peers lived on
  kDivergence,        // same position, different collective fingerprint
  kStraggler,         // compute, communication or I/O slower than its peers
  kSdc,               // replay or output signature disagrees, recurring
  kObserverLost,      // a scoutd (node) stopped answering
  kTelemetryAnomaly,  // advisory, from the federated detector
  kTransient,         // a replay dissent that did not recur (advisory)
  kAbort,             // a rank called MPI_Abort first: the application ended the job
  kDeadlock,          // ranks blocked inside MPI on each other in a cycle (an application bug)
  kGpuHang,           // a GPU stopped executing what its host issued; the others wait for it
  kGpuHealth,         // a GPU's own health counters (ECC, remapping, XID, NVLink, temperature)
};
inline constexpr std::array kAllVerdictKinds = {
    VerdictKind::kHang, VerdictKind::kStall, VerdictKind::kCrash, VerdictKind::kDivergence,
    VerdictKind::kStraggler, VerdictKind::kSdc, VerdictKind::kObserverLost,
    VerdictKind::kTelemetryAnomaly, VerdictKind::kTransient, VerdictKind::kAbort, VerdictKind::kDeadlock,
    VerdictKind::kGpuHang, VerdictKind::kGpuHealth};

enum class VerdictStatus { kAttributed, kInconclusive, kAdvisory };
inline constexpr std::array kAllVerdictStatuses = {VerdictStatus::kAttributed, VerdictStatus::kInconclusive,
                                                   VerdictStatus::kAdvisory};

const char* to_string(VerdictKind k) noexcept;
const char* to_string(VerdictStatus s) noexcept;
std::optional<VerdictKind> verdict_kind_from(std::string_view name) noexcept;
std::optional<VerdictStatus> verdict_status_from(std::string_view name) noexcept;

// What root needs before it acts on a verdict of a kind (gate/policy.hpp):
//   kNone       never acted on (advisories, the observer, the application's own bug)
//   kReproduce  root re-runs what the verdict names (sdc)
//   kSuspect    root's own node check, or blame from many jobs and users
enum class EvidenceClass { kNone, kReproduce, kSuspect };
EvidenceClass evidence_class(VerdictKind k) noexcept;
const char* to_string(EvidenceClass c) noexcept;

// Kinds the epilog and prolog may act on (drain_kinds, prolog_kinds): the
// ones that name a failing node rather than an advisory or the observer
// (evidence_class != kNone).
bool drainable(VerdictKind k) noexcept;
// The kinds the epilog drains on when the site names none (drain_kinds):
// stall, crash, sdc, gpu_hang, gpu_health, in the table's order.
std::vector<std::string> default_drain_kinds();
// "hang, stall, crash, divergence, sdc, gpu_hang or gpu_health": for error messages.
std::string drainable_kinds_text();
// "'hang','stall',...": the SQL CHECK list, for the test that compares them.
std::string verdict_kinds_sql_list();

}  // namespace scout::c3
