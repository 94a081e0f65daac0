// The collective-position consensus rule (see progress_rules.hpp).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "libc3/rank_record.hpp"
#include "libc3/verdict_rules.hpp"
#include "scoutd/detect/call_groups.hpp"
#include "scoutd/detect/progress_rules.hpp"
#include "common/proc_info.hpp"

namespace scout::scoutd::rules {

using nlohmann::json;

std::vector<VerdictDraft> detect_consensus(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt) {
  std::vector<VerdictDraft> out;
  std::size_t waiting = 0, stuck = 0;
  for (auto* e : live) {
    if (e->stalled_s >= opt.stall_threshold_s) ++stuck;
    if (e->in_collective || !e->p2p_call.empty()) ++waiting;
  }
  // A hang stops a strict majority of the ranks (the culprit and those that
  // wait for it). A job that computes for a long time without collectives is
  // not hung either: someone must be waiting for the others.
  if (!c3::strict_majority(stuck, live.size()) || waiting == 0) return out;

  std::vector<std::uint64_t> pos;
  for (auto* e : live) pos.push_back(e->seq);
  auto pc = c3::exact_consensus(pos);
  std::vector<int> waiting_ranks;
  for (auto* e : live)
    if (e->in_collective) waiting_ranks.push_back(e->rank);

  // Without a strict majority at one position, the position a strict
  // majority reached (at or past it): ranks ahead of the one they wait for
  // spread over several positions when rooted collectives let some go on
  // (a Gatherv's senders are in the Allgatherv after it, its root still in
  // it, both waiting for the rank that has not come).
  // Positions count every collective a rank makes, on any communicator:
  // they line up across ranks only while all use one (ranks of a
  // sub-communicator are ahead by its collectives, not ahead of anyone).
  const bool one_comm = std::all_of(live.begin(), live.end(), [&](auto* e) {
    if (e->comm_id != live.front()->comm_id || e->threaded) return false;
    for (auto& [c, w] : e->comm_wait)
      if (c != e->comm_id) return false;
    return true;
  });
  std::uint64_t reached = 0;
  std::size_t reached_count = pc.majority_count;
  if (pc.outcome == c3::ExactOutcome::kAttributed) {
    reached = *pc.majority_value;
  } else if (pc.outcome == c3::ExactOutcome::kInconclusive && one_comm) {
    std::vector<std::uint64_t> sorted = pos;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    reached = sorted[sorted.size() / 2];
    reached_count = static_cast<std::size_t>(std::count_if(pos.begin(), pos.end(), [&](auto p) { return p >= reached; }));
  }
  const bool behind_some =
      reached > 0 && std::any_of(pos.begin(), pos.end(), [&](auto p) { return p < reached; });
  if (pc.outcome == c3::ExactOutcome::kAttributed ||
      (pc.outcome == c3::ExactOutcome::kInconclusive && behind_some)) {
    const std::uint64_t majority = reached;
    std::vector<std::size_t> outliers;
    for (std::size_t i = 0; i < live.size(); ++i)
      if (live[i]->seq != majority) outliers.push_back(i);
    // Behind inside a collective that a strict majority went on past (a
    // rooted one lets members go on): what each called there is compared
    // with what the others did (their recent fingerprints). A rank that
    // called something else diverged; those that called what the majority
    // did are waiting for it, not the ones to name.
    std::set<int> set_aside;
    std::map<std::uint64_t, std::vector<const RankEvidence*>> behind_at;
    for (auto i : outliers)
      if (live[i]->seq < majority && live[i]->in_collective) behind_at[live[i]->seq].push_back(live[i]);
    for (auto& [p, bs] : behind_at) {
      std::vector<const RankEvidence*> voters = bs;
      std::vector<std::uint64_t> fps;
      for (auto* e : bs) fps.push_back(e->fingerprint);
      for (auto* e : live)
        if (e->seq > p)
          for (auto& x : e->recent)
            if (x.seq == p) {
              if (x.comm == bs.front()->comm_id) {  // the same communicator's collective, or no vote
                voters.push_back(e);
                fps.push_back(x.fingerprint);
              }
              break;
            }
      const auto fc = c3::exact_consensus(fps);
      if (fc.outcome != c3::ExactOutcome::kAttributed || !c3::strict_majority(fc.majority_count, live.size())) continue;
      std::vector<const RankEvidence*> odd;
      for (auto k : fc.outliers)
        if (voters[k]->seq == p) odd.push_back(voters[k]);
      if (odd.empty()) continue;
      for (auto* e : bs) set_aside.insert(e->rank);
      VerdictDraft d = draft(c3::VerdictKind::kDivergence, c3::VerdictStatus::kAttributed, odd);
      json cj = json::array();
      for (auto* e : odd) cj.push_back(rank_brief(*e));
      d.evidence = {{"rule", "inside a collective that a strict majority went on past, with another fingerprint"},
                    {"position", p},
                    {"majority_position", majority},
                    {"majority_fingerprint", fmt::format("{:016x}", *fc.majority_value)},
                    {"majority_count", fc.majority_count},
                    {"peers", live.size()},
                    {"culprits", cj}};
      std::string mismatch;
      std::size_t dropped = 0;
      d.evidence["groups"] = collective_groups(bs, &mismatch, &dropped);
      d.evidence["mismatch"] = mismatch;
      if (dropped) d.evidence["groups_dropped"] = dropped;
      std::vector<int> went_on;
      for (auto* e : live)
        if (e->seq > p) went_on.push_back(e->rank);
      put_list(d.evidence, "went_on", went_on);
      d.key = key_of("divergence", d.ranks, p);
      out.push_back(std::move(d));
    }
    std::vector<const RankEvidence*> behind_io, behind_stalled, behind_running;
    for (auto i : outliers) {
      auto* e = live[i];
      if (e->seq >= majority) continue;  // ahead: not the one the others wait for
      if (set_aside.count(e->rank)) continue;  // a divergence above, or waiting for it
      if (common::in_io_syscall(e->syscall) && e->state != 'T' && e->state != 't')
        behind_io.push_back(e);  // inside a read/write: an I/O straggler
      else
        (is_stalled_state(e->state) ? behind_stalled : behind_running).push_back(e);
    }
    for (auto* group : {&behind_io, &behind_stalled, &behind_running}) {
      if (group->empty()) continue;
      const auto kind = group == &behind_io        ? c3::VerdictKind::kStraggler
                        : group == &behind_stalled ? c3::VerdictKind::kStall
                                                   : c3::VerdictKind::kHang;
      VerdictDraft d = draft(kind, c3::VerdictStatus::kAttributed, *group);
      json culprits = json::array();
      for (auto* e : *group) culprits.push_back(rank_brief(*e));
      d.evidence = {{"rule", group == &behind_io
                                 ? "behind the collective position a strict majority reached, "
                                   "blocked inside a read/write system call"
                                 : "behind the collective position a strict majority reached"},
                    {"majority_position", majority},
                    {"majority_count", reached_count},
                    {"peers", live.size()},
                    {"culprits", culprits}};
      put_list(d.evidence, "waiting", waiting_ranks);
      if (group == &behind_io) d.evidence["type"] = "io";
      // One incident whatever the culprit's process state does meanwhile
      // (a stopped rank that is continued shows R until it catches up).
      // A stopped rank that is continued runs behind the others until it
      // catches up (a gather in that moment saw it "R", behind: a second
      // verdict, a hang, for the same incident; the Slurm tests' flake).
      // So the culprits and where they are behind key the incident, not the
      // state; an I/O straggler is its own kind of incident.
      d.key = group == &behind_io ? key_of("behind", d.ranks, majority) : stall_key(*group);
      out.push_back(std::move(d));
    }
    if (!out.empty()) return out;
  }
  // Nobody is behind a strict majority: the job stopped at the lowest
  // position; ranks past it went on (a rooted collective's root, an eager
  // sender), and say what they called there from their recent collectives.
  std::uint64_t position = UINT64_MAX;
  for (auto* e : live) position = std::min(position, e->seq);
  std::vector<const RankEvidence*> at, ahead;
  for (auto* e : live) (e->seq == position ? at : ahead).push_back(e);
  const bool all_inside = std::all_of(at.begin(), at.end(), [](auto* e) { return e->in_collective; });
  // A strict majority at one position with nobody behind and the ranks at
  // the lowest one not all waiting in a collective (a master gone on to
  // gather while its workers compute) is no hang of the collectives; a
  // threaded rank's positions are per communicator (the threads rule).
  const bool threaded = std::any_of(live.begin(), live.end(), [](auto* e) { return e->threaded; });
  if (pc.outcome == c3::ExactOutcome::kAttributed && !ahead.empty() && (!all_inside || threaded)) return out;
  if (!all_inside && !ahead.empty()) {
    VerdictDraft d = draft(c3::VerdictKind::kHang, c3::VerdictStatus::kInconclusive, {});
    // Where the ranks are: how many at each position (the most crowded
    // kListMax positions), and each rank's own for the first kListMax.
    json positions = json::object();
    std::map<std::uint64_t, std::size_t> count_at;
    for (auto* e : live) {
      if (positions.size() < kListMax) positions[std::to_string(e->rank)] = e->seq;
      ++count_at[e->seq];
    }
    std::vector<std::pair<std::size_t, std::uint64_t>> crowd;
    for (auto& [p, n] : count_at) crowd.push_back({n, p});
    std::stable_sort(crowd.begin(), crowd.end(), [](auto& a, auto& b) { return a.first > b.first; });
    if (crowd.size() > kListMax) crowd.resize(kListMax);
    json position_counts = json::object();
    for (auto& [n, p] : crowd) position_counts[std::to_string(p)] = n;
    d.evidence = {{"rule", "no strict majority at one collective position"},
                  {"positions", positions},
                  {"position_counts", position_counts}};
    put_list(d.evidence, "waiting", waiting_ranks);
    d.key = key_of("hang-inconclusive", {}, 0);
    out.push_back(std::move(d));
    return out;
  }
  if (!all_inside) {
    VerdictDraft d = draft(c3::VerdictKind::kHang, c3::VerdictStatus::kInconclusive, {});
    d.evidence = {{"rule", "same collective position, some ranks waiting and some not"},
                  {"position", position}};
    put_list(d.evidence, "waiting", waiting_ranks);
    d.key = key_of("hang-mixed", {}, position);
    out.push_back(std::move(d));
    return out;
  }
  // The fingerprints at that position: the waiting ranks' own, and those of
  // the ranks past it that still list it (others do not vote).
  std::vector<const RankEvidence*> voters = at;
  std::vector<std::uint64_t> fps;
  for (auto* e : at) fps.push_back(e->fingerprint);
  std::vector<int> went_on;
  for (auto* e : ahead) {
    went_on.push_back(e->rank);
    for (auto& x : e->recent)
      if (x.seq == position) {
        // A vote only for a collective of a communicator the ranks there are in.
        if (std::any_of(at.begin(), at.end(), [&](auto* a) { return a->comm_id == x.comm; })) {
          voters.push_back(e);
          fps.push_back(x.fingerprint);
        }
        break;
      }
  }
  auto fc = c3::exact_consensus(fps);
  std::string mismatch;
  std::size_t dropped = 0;
  const json groups = collective_groups(at, &mismatch, &dropped);
  auto add_groups = [&](VerdictDraft& d) {
    d.evidence["groups"] = groups;
    d.evidence["mismatch"] = mismatch;
    if (dropped) d.evidence["groups_dropped"] = dropped;
    if (!went_on.empty()) put_list(d.evidence, "went_on", went_on);
  };
  const bool differ = fc.outcome != c3::ExactOutcome::kAgree;
  if (fc.outcome == c3::ExactOutcome::kAttributed) {
    std::vector<const RankEvidence*> culprits;
    for (auto i : fc.outliers) culprits.push_back(voters[i]);
    const RankEvidence* ref = nullptr;
    for (std::size_t i = 0; i < voters.size() && !ref; ++i)
      if (fps[i] == *fc.majority_value && voters[i]->seq == position) ref = voters[i];
    VerdictDraft d = draft(c3::VerdictKind::kDivergence, c3::VerdictStatus::kAttributed, culprits);
    json cj = json::array();
    for (auto* e : culprits) cj.push_back(rank_brief(*e));
    d.evidence = {{"rule", "same position, collective fingerprint differs from the strict majority"},
                  {"position", position},
                  {"majority_collective", ref ? c3::coll_name(ref->kind) : "?"},
                  {"majority_fingerprint", fmt::format("{:016x}", *fc.majority_value)},
                  {"majority_count", fc.majority_count},
                  {"peers", voters.size()},
                  {"culprits", cj}};
    add_groups(d);
    d.key = key_of("divergence", d.ranks, position);
    out.push_back(std::move(d));
    return out;
  }
  const auto kind = differ ? c3::VerdictKind::kDivergence : c3::VerdictKind::kHang;
  VerdictDraft d = draft(kind, c3::VerdictStatus::kInconclusive, {});
  std::set<std::uint64_t> comms;
  std::vector<int> members;
  for (auto* e : at) {
    comms.insert(e->comm_id);
    members.push_back(e->rank);
  }
  json comm_list = json::array();
  for (auto c : comms)
    if (comm_list.size() < kListMax) comm_list.push_back(fmt::format("{:016x}", c));
  d.evidence = {{"rule", differ ? "same position, no strict majority of collective fingerprints"
                         : ahead.empty()
                             ? "every member waits in the same collective: communication hang, no rank is behind"
                             : "the ranks at the lowest position wait in the same collective that the others "
                               "went on past: communication hang, no rank is behind"},
                {"position", position},
                {"collective", c3::coll_name(at.front()->kind)},
                {"communicators", comm_list},
                {"communicators_count", comms.size()}};
  put_list(d.evidence, "members", members);
  // No strict majority (two ranks never have one), but the facts stand:
  // which ranks are in which collective.
  if (differ) add_groups(d);
  else if (!went_on.empty()) put_list(d.evidence, "went_on", went_on);
  d.key = key_of(std::string(c3::to_string(d.kind)) + "-inconclusive", {}, position);
  out.push_back(std::move(d));
  return out;
}

}  // namespace scout::scoutd::rules
