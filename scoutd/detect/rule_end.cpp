// Crashes and aborts: the end events the probe wrote, and deaths a strict
// minority of the ranks died first (see progress_detector.hpp).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "libc3/rank_record.hpp"
#include "libc3/verdict_rules.hpp"
#include "scoutd/detect/progress_rules.hpp"
#include "common/proc_info.hpp"

namespace scout::scoutd {

using nlohmann::json;

namespace rules {

namespace {
// An MPI error's class by its standard name, or its number in the library.
std::string mpi_error_class(const RankEvidence& e) {
  if (e.end_addr >= 1 && e.end_addr <= c3::kMpiErrorClassCount) return c3::kMpiErrorClassNames[e.end_addr - 1];
  return fmt::format("error class {}", e.end_code);
}
}  // namespace

// The rank that ended the job and why, from the end events the probe wrote
// (MPI_Abort, a fatal signal): direct evidence, so it needs no majority; the
// launcher may kill every other rank milliseconds later.
std::optional<VerdictDraft> detect_end_event(const std::vector<RankEvidence>& ranks, const DetectorOptions& opt) {
  // A fatal signal counts once its process is gone, and only if no other
  // rank had died before it: a rank that faults while the job is being torn
  // down (its peers killed, their shared memory gone) did not start the end.
  std::vector<const RankEvidence*> ended;
  for (auto& e : ranks) {
    if (!e.attached || e.finalized || e.end_kind.empty()) continue;
    // Written after the launcher said it stops the job: the stop's end (a
    // program that calls MPI_Abort on SIGINT, a fault while torn down). An
    // event from before the stop counts, even if its death was seen after.
    if (e.ended_on_stop) continue;
    if (e.end_kind == "signal") {
      if (e.alive || e.death_ns == 0) continue;
      bool others_died_first = false;
      for (auto& o : ranks)
        if (&o != &e && o.attached && !o.alive && o.death_ns > 0 && o.death_ns < e.end_ns) others_died_first = true;
      if (others_died_first) continue;
    }
    ended.push_back(&e);
  }
  if (ended.empty()) return std::nullopt;
  std::int64_t first = ended.front()->end_ns;
  for (auto* e : ended) first = std::min(first, e->end_ns);
  const auto margin = static_cast<std::int64_t>(opt.death_margin_s * 1e9);
  std::vector<const RankEvidence*> early;
  for (auto* e : ended)
    if (e->end_ns <= first + margin) early.push_back(e);
  // An abort (MPI_Abort, or an MPI call failing under MPI_ERRORS_ARE_FATAL:
  // the application's own end) names the first caller whatever the others
  // do; a fatal signal in every rank at once is the program's, not one rank's.
  auto app_end = [](const RankEvidence* e) { return e->end_kind == "abort" || e->end_kind == "mpi_error"; };
  bool abort = false;
  for (auto* e : early) abort |= app_end(e);
  std::size_t observed = 0;
  for (auto& e : ranks)
    if (e.attached) ++observed;
  if (!abort && !c3::strict_minority(early.size(), observed)) return std::nullopt;
  if (abort) {
    std::vector<const RankEvidence*> aborted;
    for (auto* e : early)
      if (app_end(e)) aborted.push_back(e);
    early = aborted;
  }
  VerdictDraft d = draft(abort ? c3::VerdictKind::kAbort : c3::VerdictKind::kCrash, c3::VerdictStatus::kAttributed, early);
  json culprits = json::array();
  for (auto* e : early) {
    json c = rank_brief(*e);
    c["end"] = e->end_kind;
    if (e->end_kind == "mpi_error") {
      c["error_class"] = mpi_error_class(*e);
      if (!e->end_call.empty()) c["call"] = e->end_call;
    } else if (abort) {
      c["error_code"] = e->end_code;
    } else {
      c["signal"] = signal_name(e->end_code);
      c["signal_number"] = e->end_code;
      c["address"] = fmt::format("0x{:x}", e->end_addr);
    }
    c["collective_position"] = e->end_seq;
    culprits.push_back(c);
  }
  json later = json::array();
  for (auto* e : ended)
    if (e->end_ns > first + margin) later.push_back({{"rank", e->rank}, {"after_s", (e->end_ns - first) / 1e9}});
  const RankEvidence& f = *early.front();
  const bool mpi_error = f.end_kind == "mpi_error";
  d.evidence = {{"rule", mpi_error ? "an MPI call failed first under MPI_ERRORS_ARE_FATAL: MPI ended the job"
                         : abort   ? "called MPI_Abort first: the application ended the job"
                                   : "the first rank killed by a fatal signal"},
                {"summary", mpi_error ? fmt::format("rank {}: {} failed with {} (MPI_ERRORS_ARE_FATAL)", f.rank,
                                                    f.end_call.empty() ? std::string("an MPI call") : f.end_call,
                                                    mpi_error_class(f))
                            : abort   ? fmt::format("rank {} called MPI_Abort with error code {}", f.rank, f.end_code)
                                  : f.end_code == 6 ? fmt::format("rank {} got SIGABRT (abort)", f.rank)
                                                    : fmt::format("rank {} got {} at address 0x{:x}", f.rank,
                                                                  signal_name(f.end_code), f.end_addr)},
                {"culprits", culprits},
                {"later", later},
                {"peers_observed", observed}};
  d.key = key_of(abort ? "abort" : "crash", d.ranks, 0);
  return d;
}

}  // namespace rules

std::optional<VerdictDraft> detect_crash(const std::vector<RankEvidence>& ranks, const DetectorOptions& opt,
                                         bool* pending) {
  using namespace rules;
  if (auto d = detect_end_event(ranks, opt)) return d;
  std::vector<const RankEvidence*> dead;
  for (auto& e : ranks)
    if (e.attached && !e.alive && !e.finalized && e.death_ns > 0 && !e.died_on_stop) dead.push_back(&e);
  if (dead.empty()) return std::nullopt;
  // No fatal signal recorded: wait until the peers outlived the first death.
  double oldest = 0;
  for (auto* e : dead) oldest = std::max(oldest, e->dead_s);
  if (oldest < opt.death_confirm_s) {
    if (pending) *pending = true;
    return std::nullopt;
  }
  std::int64_t first = dead.front()->death_ns;
  for (auto* e : dead) first = std::min(first, e->death_ns);
  const auto margin = static_cast<std::int64_t>(opt.death_margin_s * 1e9);
  std::vector<const RankEvidence*> early;
  for (auto* e : dead)
    if (e->death_ns <= first + margin) early.push_back(e);
  std::size_t observed = 0;
  for (auto& e : ranks)
    if (e.attached) ++observed;
  // The first deaths must be a strict minority that their peers outlived;
  // a whole job going down at once (Ctrl-C, scancel) localises nothing, and
  // deaths after the launcher said it stops the job are left out above (its
  // ranks die one after another, the first no more a culprit than the last).
  if (!c3::strict_minority(early.size(), observed)) return std::nullopt;
  VerdictDraft d = draft(c3::VerdictKind::kCrash, c3::VerdictStatus::kAttributed, early);
  json culprits = json::array(), later = json::array();
  bool gpu = false;
  for (auto* e : early) {
    culprits.push_back(e->gpu.present ? gpu_brief(*e) : rank_brief(*e));
    gpu |= e->gpu.present;
  }
  for (auto* e : dead)
    if (e->death_ns > first + margin)
      later.push_back({{"rank", e->rank}, {"after_s", (e->death_ns - first) / 1e9}});
  d.evidence = {{"rule", gpu ? "process gone before it finished (an NCCL rank, its GPU named) while its peers lived on"
                             : "process gone without MPI_Finalize while its peers lived on"},
                {"culprits", culprits},
                {"later_deaths", later},
                {"peers_observed", observed},
                {"margin_s", opt.death_margin_s}};
  d.key = key_of("crash", d.ranks, 0);
  return d;
}

}  // namespace scout::scoutd
