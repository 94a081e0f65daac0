// Progress and crash detectors (see progress_detector.hpp).
#include "scoutd/detect/progress_detector.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "libc3/rank_record.hpp"
#include "libc3/verdict_rules.hpp"
#include "scoutd/observe/proc_info.hpp"

namespace scout::scoutd {

using nlohmann::json;

namespace {

json rank_brief(const RankEvidence& e) {
  return json{{"rank", e.rank}, {"host", e.node}, {"pid", e.pid}, {"seq", e.seq},
              {"collective", c3::coll_name(e.kind)},
              {"nonblocking", (e.kind & c3::kFlagNonblocking) != 0},
              {"in_collective", e.in_collective}, {"state", std::string(1, e.state)},
              {"process", describe_state(e.state)}, {"wchan", e.wchan},
              {"stalled_s", e.stalled_s}, {"fingerprint", fmt::format("{:016x}", e.fingerprint)},
              {"syscall", syscall_name(e.syscall)}, {"rchar", e.rchar}, {"wchar", e.wchar}};
}

std::vector<std::string> hosts_of(const std::vector<const RankEvidence*>& v) {
  std::set<std::string> s;
  for (auto* e : v) s.insert(e->node);
  return {s.begin(), s.end()};
}

std::vector<int> ranks_of(const std::vector<const RankEvidence*>& v) {
  std::vector<int> r;
  for (auto* e : v) r.push_back(e->rank);
  std::sort(r.begin(), r.end());
  return r;
}

bool is_stalled_state(char s) { return s == 'T' || s == 't' || s == 'D' || s == 'Z'; }

std::string key_of(const std::string& kind, const std::vector<int>& ranks, std::uint64_t pos) {
  std::string k = fmt::format("{}@{}:", kind, pos);
  for (int r : ranks) k += fmt::format("{},", r);
  return k;
}

}  // namespace

std::optional<VerdictDraft> detect_crash(const std::vector<RankEvidence>& ranks,
                                         const DetectorOptions& opt) {
  std::vector<const RankEvidence*> dead;
  for (auto& e : ranks)
    if (e.attached && !e.alive && !e.finalized && e.death_ns > 0) dead.push_back(&e);
  if (dead.empty()) return std::nullopt;
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
  // a whole job going down at once (Ctrl-C, scancel) localises nothing.
  if (2 * early.size() >= observed) return std::nullopt;
  VerdictDraft d;
  d.kind = c3::VerdictKind::kCrash;
  d.status = c3::VerdictStatus::kAttributed;
  d.ranks = ranks_of(early);
  d.hosts = hosts_of(early);
  json culprits = json::array(), later = json::array();
  for (auto* e : early) culprits.push_back(rank_brief(*e));
  for (auto* e : dead)
    if (e->death_ns > first + margin)
      later.push_back({{"rank", e->rank}, {"after_s", (e->death_ns - first) / 1e9}});
  d.evidence = {{"rule", "process gone without MPI_Finalize while its peers lived on"},
                {"culprits", culprits},
                {"later_deaths", later},
                {"peers_observed", observed},
                {"margin_s", opt.death_margin_s}};
  d.key = key_of("crash", d.ranks, 0);
  return d;
}

std::vector<VerdictDraft> detect_progress(const std::vector<RankEvidence>& ranks,
                                          const DetectorOptions& opt) {
  std::vector<VerdictDraft> out;
  std::vector<const RankEvidence*> live;
  for (auto& e : ranks)
    if (e.attached && e.alive && !e.finalized) live.push_back(&e);
  if (live.size() < 2) return out;
  std::size_t waiting = 0, stuck = 0;
  for (auto* e : live) {
    if (e->stalled_s >= opt.stall_threshold_s) ++stuck;
    if (e->in_collective) ++waiting;
  }
  // A hang stops a strict majority of the ranks (the culprit and those that
  // wait for it). A job that computes for a long time without collectives is
  // not hung either: someone must be waiting for the others.
  if (2 * stuck <= live.size() || waiting == 0) return out;

  std::vector<std::uint64_t> pos;
  for (auto* e : live) pos.push_back(e->seq);
  auto pc = c3::exact_consensus(pos);
  json waiting_ranks = json::array();
  for (auto* e : live)
    if (e->in_collective) waiting_ranks.push_back(e->rank);

  if (pc.outcome == c3::ExactOutcome::kAttributed) {
    const std::uint64_t majority = *pc.majority_value;
    std::vector<const RankEvidence*> behind_io, behind_stalled, behind_running;
    for (auto i : pc.outliers) {
      auto* e = live[i];
      if (e->seq >= majority) continue;  // ahead: not the one the others wait for
      if (in_io_syscall(e->syscall) && e->state != 'T' && e->state != 't')
        behind_io.push_back(e);  // inside a read/write: an I/O straggler
      else
        (is_stalled_state(e->state) ? behind_stalled : behind_running).push_back(e);
    }
    for (auto* group : {&behind_io, &behind_stalled, &behind_running}) {
      if (group->empty()) continue;
      VerdictDraft d;
      d.kind = group == &behind_io        ? c3::VerdictKind::kStraggler
               : group == &behind_stalled ? c3::VerdictKind::kStall
                                          : c3::VerdictKind::kHang;
      d.status = c3::VerdictStatus::kAttributed;
      d.ranks = ranks_of(*group);
      d.hosts = hosts_of(*group);
      json culprits = json::array();
      for (auto* e : *group) culprits.push_back(rank_brief(*e));
      d.evidence = {{"rule", group == &behind_io
                                 ? "behind the collective position a strict majority reached, "
                                   "blocked inside a read/write system call"
                                 : "behind the collective position a strict majority reached"},
                    {"majority_position", majority},
                    {"majority_count", pc.majority_count},
                    {"peers", live.size()},
                    {"culprits", culprits},
                    {"waiting", waiting_ranks}};
      if (group == &behind_io) d.evidence["type"] = "io";
      // One incident whatever the culprit's process state does meanwhile
      // (a stopped rank that is continued shows R until it catches up).
      d.key = key_of("behind", d.ranks, majority);
      out.push_back(std::move(d));
    }
    return out;
  }
  if (pc.outcome == c3::ExactOutcome::kInconclusive) {
    VerdictDraft d;
    d.kind = c3::VerdictKind::kHang;
    d.status = c3::VerdictStatus::kInconclusive;
    json positions = json::object();
    for (auto* e : live) positions[std::to_string(e->rank)] = e->seq;
    d.evidence = {{"rule", "no strict majority at one collective position"},
                  {"positions", positions},
                  {"waiting", waiting_ranks}};
    d.key = key_of("hang-inconclusive", {}, 0);
    out.push_back(std::move(d));
    return out;
  }
  // Everyone at the same position.
  const std::uint64_t position = *pc.majority_value;
  bool all_inside = std::all_of(live.begin(), live.end(), [](auto* e) { return e->in_collective; });
  if (!all_inside) {
    VerdictDraft d;
    d.kind = c3::VerdictKind::kHang;
    d.status = c3::VerdictStatus::kInconclusive;
    d.evidence = {{"rule", "same collective position, some ranks waiting and some not"},
                  {"position", position},
                  {"waiting", waiting_ranks}};
    d.key = key_of("hang-mixed", {}, position);
    out.push_back(std::move(d));
    return out;
  }
  std::vector<std::uint64_t> fps;
  for (auto* e : live) fps.push_back(e->fingerprint);
  auto fc = c3::exact_consensus(fps);
  if (fc.outcome == c3::ExactOutcome::kAttributed) {
    std::vector<const RankEvidence*> culprits;
    for (auto i : fc.outliers) culprits.push_back(live[i]);
    const RankEvidence* ref = nullptr;
    for (auto* e : live)
      if (e->fingerprint == *fc.majority_value) { ref = e; break; }
    VerdictDraft d;
    d.kind = c3::VerdictKind::kDivergence;
    d.status = c3::VerdictStatus::kAttributed;
    d.ranks = ranks_of(culprits);
    d.hosts = hosts_of(culprits);
    json cj = json::array();
    for (auto* e : culprits) cj.push_back(rank_brief(*e));
    d.evidence = {{"rule", "same position, collective fingerprint differs from the strict majority"},
                  {"position", position},
                  {"majority_collective", c3::coll_name(ref->kind)},
                  {"majority_fingerprint", fmt::format("{:016x}", *fc.majority_value)},
                  {"majority_count", fc.majority_count},
                  {"peers", live.size()},
                  {"culprits", cj}};
    d.key = key_of("divergence", d.ranks, position);
    out.push_back(std::move(d));
    return out;
  }
  VerdictDraft d;
  d.kind = fc.outcome == c3::ExactOutcome::kInconclusive ? c3::VerdictKind::kDivergence : c3::VerdictKind::kHang;
  d.status = c3::VerdictStatus::kInconclusive;
  std::set<std::uint64_t> comms;
  json members = json::array();
  for (auto* e : live) {
    comms.insert(e->comm_id);
    members.push_back(e->rank);
  }
  json comm_list = json::array();
  for (auto c : comms) comm_list.push_back(fmt::format("{:016x}", c));
  d.evidence = {{"rule", fc.outcome == c3::ExactOutcome::kInconclusive
                             ? "same position, no strict majority of collective fingerprints"
                             : "every member waits in the same collective: communication hang, "
                               "no rank is behind"},
                {"position", position},
                {"collective", c3::coll_name(live.front()->kind)},
                {"communicators", comm_list},
                {"members", members}};
  d.key = key_of(std::string(c3::to_string(d.kind)) + "-inconclusive", {}, position);
  out.push_back(std::move(d));
  return out;
}

}  // namespace scout::scoutd
