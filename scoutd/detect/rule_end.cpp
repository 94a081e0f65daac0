// Crashes and aborts: the end events the probe wrote (MPI_Abort, an MPI
// error, a fatal signal, an exit before MPI_Finalize), and deaths a strict
// minority of the ranks died first (see progress_detector.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "libc3/rank_record.hpp"
#include "libc3/verdict_rules.hpp"
#include "scoutd/detect/progress_rules.hpp"
#include "scoutd/detect/stack_classes.hpp"
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
// The collective a rank is in, as its caller wrote it: MPI_Allreduce,
// MPI_Iallreduce for a nonblocking one.
std::string collective_call(const RankEvidence& e) {
  std::string c = c3::coll_name(e.kind);
  if (c.empty() || c == "unknown" || c == "none") return "a collective";
  c[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(c[0])));
  return ((e.kind & 0x100) ? "MPI_I" : "MPI_") + c;
}
// Whether rank a's end came before rank b's: by the nanoseconds of one
// host's monotonic clock when both are on one node, else by their ages
// (seconds since each died, as each node's observer saw it at the gather:
// monotonic clocks of two hosts do not compare). `an`, `bn`: the instants.
bool before(const RankEvidence& a, std::int64_t an, const RankEvidence& b, std::int64_t bn) {
  if (a.node == b.node) return an < bn;
  return a.dead_s > b.dead_s;
}
// How far apart two deaths are, in seconds (same node: by the clock; else by age).
double apart_s(const RankEvidence& a, std::int64_t an, const RankEvidence& b, std::int64_t bn) {
  if (a.node == b.node) return std::fabs(static_cast<double>(an - bn)) / 1e9;
  return std::fabs(a.dead_s - b.dead_s);
}
bool exited(const RankEvidence& e) { return e.attached && e.end_kind == "exit" && !e.finalized; }
// How long before the gather rank e's end event was written, on the axis
// every node shares (its observer's age of it; from an older observer,
// which sends no age, derived from the death's age on the same clock);
// -1 when neither is known (an older observer's rank still alive).
double end_ago(const RankEvidence& e) {
  if (e.end_age_s >= 0) return e.end_age_s;
  return e.death_ns > 0 ? std::max(0.0, e.dead_s + static_cast<double>(e.death_ns - e.end_ns) / 1e9) : -1;
}
constexpr std::size_t kMaxListed = 64;  // ranks left waiting listed in the evidence (all counted)
// The two largest ages of a set of ranks, so that "another rank of the set
// is older than x" is one comparison per rank, not a pass over the job (a
// teardown of 100,000 ranks: every rule here runs once per gather). Ages
// taken on one node differ exactly as its clock does, so they order deaths
// on one node as on two.
struct Oldest {
  double age[2] = {-1, -1};
  const RankEvidence* who[2] = {nullptr, nullptr};
  void add(const RankEvidence& e, double a) {
    if (a > age[0]) {
      age[1] = age[0], who[1] = who[0];
      age[0] = a, who[0] = &e;
    } else if (a > age[1]) {
      age[1] = a, who[1] = &e;
    }
  }
  // Whether a rank of the set other than `e` is older than `a`.
  bool other_older(const RankEvidence& e, double a) const { return (who[0] == &e ? age[1] : age[0]) > a; }
};
}  // namespace

// The rank that ended the job and why, from the end events the probe wrote
// (MPI_Abort, a fatal signal): direct evidence, so it needs no majority; the
// launcher may kill every other rank milliseconds later.
std::optional<VerdictDraft> detect_end_event(const std::vector<RankEvidence>& ranks, const DetectorOptions& opt) {
  // A fatal signal counts once its process is gone, and only if no other
  // rank had died before it: a rank that faults while the job is being torn
  // down (its peers killed, their shared memory gone) did not start the end.
  Oldest exits, deaths;  // exits before MPI_Finalize (by their events' ages); deaths
  for (auto& x : ranks) {
    if (exited(x) && !x.ended_on_stop && !x.alive && x.death_ns > 0) exits.add(x, end_ago(x));
    if (x.attached && !x.alive && x.death_ns > 0) deaths.add(x, x.dead_s);
  }
  std::vector<const RankEvidence*> ended;
  for (auto& e : ranks) {
    if (!e.attached || e.finalized || e.end_kind.empty() || e.end_kind == "exit") continue;  // detect_exit's
    // Written after another rank exited before MPI_Finalize: a rank whose
    // call failed because its peer left (an MPI error), or that aborted on
    // the launcher's signal, is that exit's victim, not the cause.
    // (An event of unknown age is not put after anything.)
    if (end_ago(e) >= 0 && exits.other_older(e, end_ago(e))) continue;
    // Written after the launcher said it stops the job: the stop's end (a
    // program that calls MPI_Abort on SIGINT, a fault while torn down). An
    // event from before the stop counts, even if its death was seen after.
    if (e.ended_on_stop) continue;
    if (e.end_kind == "signal") {
      if (e.alive || e.death_ns == 0) continue;
      if (deaths.other_older(e, end_ago(e))) continue;  // another rank died before its signal
    }
    ended.push_back(&e);
  }
  if (ended.empty()) return std::nullopt;
  // The first events by their ages (two hosts' monotonic clocks do not
  // compare; ages taken on one node differ exactly as its clock does).
  // An event of unknown age cannot be ordered: it counts among the first.
  double first = 0;
  for (auto* e : ended) first = std::max(first, end_ago(*e));
  std::vector<const RankEvidence*> early;
  for (auto* e : ended)
    if (end_ago(*e) < 0 || end_ago(*e) >= first - opt.death_margin_s) early.push_back(e);
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
    if (end_ago(*e) >= 0 && end_ago(*e) < first - opt.death_margin_s)
      later.push_back({{"rank", e->rank}, {"after_s", first - end_ago(*e)}});
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

std::optional<VerdictDraft> detect_exit(const std::vector<RankEvidence>& ranks, const DetectorOptions& opt,
                                        bool* pending) {
  // The exits that count: recorded before the launcher said it stops the
  // job, the process gone, and no rank died before it (an exit while the
  // job is torn down is the teardown's).
  Oldest deaths;  // of the ranks that did not exit
  for (auto& o : ranks)
    if (o.attached && !o.alive && o.death_ns > 0 && !exited(o)) deaths.add(o, o.dead_s);
  std::vector<const RankEvidence*> exits;
  std::size_t observed = 0, n_exited = 0;
  for (auto& e : ranks) {
    if (!e.attached) continue;
    ++observed;
    if (!exited(e)) continue;
    ++n_exited;
    if (e.ended_on_stop || e.alive || e.death_ns == 0) continue;
    if (!deaths.other_older(e, e.dead_s)) exits.push_back(&e);
  }
  if (exits.empty() || n_exited >= observed) return std::nullopt;  // every rank exiting is the program's end
  const RankEvidence* first = exits.front();
  for (auto* e : exits)
    if (before(*e, e->death_ns, *first, first->death_ns)) first = e;
  std::vector<const RankEvidence*> early;
  for (auto* e : exits)
    if (apart_s(*e, e->death_ns, *first, first->death_ns) <= opt.death_margin_s) early.push_back(e);
  const double age = first->dead_s;
  // The ranks it left waiting: in an MPI call that needs it at their last
  // evidence (a collective of a communicator it belongs to, a point-to-point
  // wait for it or for any source), not exited themselves, and either
  // killed since (the launcher tearing the job down after the exit) or
  // alive and stuck there since (no progress for kExitWait_s: a rank merely
  // passing through a collective on its way to its own exit is not left).
  std::set<int> gone;
  for (auto* e : early) gone.insert(e->rank);
  auto needs = [&](const RankEvidence& w) {
    if (!w.p2p_call.empty()) {
      for (int p : w.p2p_peers)
        if (p < 0 || gone.count(p)) return true;
      return w.p2p_peers.empty();
    }
    if (!w.in_collective) return false;
    auto m = w.comm_members.find(w.comm_id);
    if (m == w.comm_members.end() || m->second.empty()) return true;  // too large to list: may need it
    for (int r : m->second)
      if (gone.count(r)) return true;
    return false;
  };
  std::vector<const RankEvidence*> killed, stuck;
  for (auto& w : ranks) {
    if (!w.attached || w.finalized || exited(w) || gone.count(w.rank) || !needs(w)) continue;
    if (!w.alive && w.death_ns > 0) {
      if (!before(w, w.death_ns, *first, first->death_ns)) killed.push_back(&w);
    } else if (w.alive && w.stalled_s >= kExitWait_s - opt.death_margin_s) {
      stuck.push_back(&w);
    }
  }
  // Decided once the exit is a margin old and a rank it left was killed
  // since, or a second old and one is stuck; at the observers' stop (the
  // job over, nothing more to come) on what there is, without the margin.
  const bool ready = (!killed.empty() && (age >= opt.death_margin_s || opt.stopping)) ||
                     (!stuck.empty() && age >= kExitWait_s);
  if (!ready) {
    if (pending && !opt.stopping && age < 3 * kExitWait_s) *pending = true;  // a rank may still block
    return std::nullopt;
  }
  std::vector<const RankEvidence*> waiting = killed;
  waiting.insert(waiting.end(), stuck.begin(), stuck.end());
  std::sort(waiting.begin(), waiting.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  VerdictDraft d = draft(c3::VerdictKind::kAbort, c3::VerdictStatus::kAttributed, early);
  json culprits = json::array(), left = json::array();
  for (auto* e : early) {
    json c = rank_brief(*e);
    c["end"] = "exit";
    c["exit_status"] = e->end_code;
    c["collective_position"] = e->end_seq;
    culprits.push_back(c);
  }
  // "rank 0 in MPI_Allreduce", "ranks 0-2,5 in MPI_Allreduce, rank 4 in MPI_Recv"
  std::map<std::string, std::vector<int>> by_call;
  for (auto* e : waiting) {
    const std::string call = !e->p2p_call.empty() ? e->p2p_call : collective_call(*e);
    if (left.size() < kMaxListed) left.push_back({{"rank", e->rank}, {"call", call}, {"alive", e->alive}});
    by_call[call].push_back(e->rank);
  }
  std::string where;
  for (auto& [call, rs] : by_call)
    where += fmt::format("{}{} {} in {}", where.empty() ? "" : ", ", rs.size() == 1 ? "rank" : "ranks", rank_list(rs),
                         call);
  const RankEvidence& f = *early.front();
  d.evidence = {{"rule", "left without MPI_Finalize (exit() or a return from main) while other ranks waited in MPI "
                         "for it: the application ended the job"},
                {"summary", fmt::format("rank {} exited (status {}) without calling MPI_Finalize while {} waited",
                                        f.rank, f.end_code, where)},
                {"culprits", culprits},
                {"left_waiting", left},
                {"left_waiting_count", waiting.size()},
                {"peers_observed", observed}};
  d.key = key_of("abort", d.ranks, 0);
  return d;
}

}  // namespace rules

std::optional<VerdictDraft> detect_crash(const std::vector<RankEvidence>& ranks, const DetectorOptions& opt,
                                         bool* pending) {
  using namespace rules;
  if (auto d = detect_end_event(ranks, opt)) return d;
  bool exit_pending = false;
  if (auto d = detect_exit(ranks, opt, &exit_pending)) return d;
  if (exit_pending) {  // its exit decides, not the order of deaths
    if (pending) *pending = true;
    return std::nullopt;
  }
  // A rank that exited is no crash (its end is known, and the program's);
  // nor is a death in the kExitTeardown_s after an exit (the launcher
  // tearing the job down). A death later than that is judged as any.
  std::vector<double> exit_ages;  // sorted: one search per death
  for (auto& x : ranks)
    if (exited(x) && !x.alive && x.death_ns > 0) exit_ages.push_back(x.dead_s);
  std::sort(exit_ages.begin(), exit_ages.end());
  auto teardown = [&](const RankEvidence& d) {
    auto it = std::upper_bound(exit_ages.begin(), exit_ages.end(), d.dead_s);  // the exits before it
    return it != exit_ages.end() && *it - d.dead_s <= kExitTeardown_s;
  };
  std::vector<const RankEvidence*> dead;
  for (auto& e : ranks)
    if (e.attached && !e.alive && !e.finalized && e.death_ns > 0 && !e.died_on_stop && !exited(e) && !teardown(e))
      dead.push_back(&e);
  if (dead.empty()) return std::nullopt;
  // No fatal signal recorded: wait until the peers outlived the first death.
  double oldest = 0;
  for (auto* e : dead) oldest = std::max(oldest, e->dead_s);
  if (oldest < opt.death_confirm_s) {
    if (pending) *pending = true;
    return std::nullopt;
  }
  // The first deaths by their ages (`oldest`), as above.
  std::vector<const RankEvidence*> early;
  for (auto* e : dead)
    if (e->dead_s >= oldest - opt.death_margin_s) early.push_back(e);
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
    if (e->dead_s < oldest - opt.death_margin_s) later.push_back({{"rank", e->rank}, {"after_s", oldest - e->dead_s}});
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
