// The per-communicator rule for threaded programs (see progress_rules.hpp).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "libc3/rank_record.hpp"
#include "libc3/verdict_rules.hpp"
#include "scoutd/detect/progress_rules.hpp"
#include "common/proc_info.hpp"

namespace scout::scoutd::rules {

using nlohmann::json;

namespace {

const RankEvidence::CommProgress* progress_of(const RankEvidence& e, std::uint64_t id) {
  for (auto& c : e.comm_progress)
    if (c.id == id) return &c;
  return nullptr;
}

// What each of a rank's threads is in: "thread 4242 waits in allreduce
// (collective 12 of 00ab..., 3.1 s)", "thread 4243 waits in MPI_Recv for 2
// (1.0 s)", "thread 4244 is outside MPI".
std::vector<std::string> thread_lines(const RankEvidence& e) {
  std::vector<std::string> out;
  for (auto& t : e.threads) {
    if (t.coll_kind)
      out.push_back(fmt::format("thread {} waits in {} (collective {} of communicator {:016x}, {:.1f} s)", t.tid,
                                c3::coll_name(t.coll_kind), t.coll_ordinal, t.coll_comm, t.coll_s));
    else if (!t.p2p_call.empty())
      out.push_back(fmt::format("thread {} waits in {} for {} ({:.1f} s)", t.tid, t.p2p_call,
                                peers_text(t.p2p_peers, false), t.p2p_wait_s));
    else
      out.push_back(fmt::format("thread {} is outside MPI", t.tid));
  }
  if (e.threads_full) out.push_back(fmt::format("{} more thread(s) called MPI (not followed)", e.threads_full));
  return out;
}

bool thread_inside(const RankEvidence& e, std::uint64_t id, std::uint64_t k) {
  for (auto& t : e.threads)
    if (t.coll_kind != 0 && t.coll_comm == id && t.coll_ordinal == k) return true;
  return false;
}

json culprit_brief(const RankEvidence& e, std::uint64_t id) {
  json j = rank_brief(e);
  const auto* c = progress_of(e, id);
  j["communicator_entered"] = c ? c->entered : 0;
  j["communicator_completed"] = c ? c->completed : 0;
  j["threads"] = thread_lines(e);
  return j;
}

}  // namespace

std::vector<VerdictDraft> detect_threads(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt) {
  std::vector<VerdictDraft> out;
  std::map<int, const RankEvidence*> by_rank;
  for (auto* e : live)
    if (e->threaded) by_rank[e->rank] = e;
  if (by_rank.size() < 2) return out;
  // Each communicator's members among the threaded ranks: those that count
  // its collectives, and those whose own record lists it as theirs but that
  // never entered one (a thread that hangs before its first collective).
  // Only a rank's own evidence makes it a member: another rank's list of
  // members cannot put it there.
  std::map<std::uint64_t, std::set<const RankEvidence*>> by_comm;
  for (auto& [r, e] : by_rank) {
    for (auto& c : e->comm_progress) by_comm[c.id].insert(e);
    for (auto& [id, m] : e->comm_members)
      if (std::find(m.begin(), m.end(), e->rank) != m.end()) by_comm[id].insert(e);
  }
  std::set<std::vector<int>> named;
  for (auto& [id, member_set] : by_comm) {
    if (member_set.size() < 2) continue;
    std::vector<const RankEvidence*> members(member_set.begin(), member_set.end());
    std::sort(members.begin(), members.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
    // Inside collective k: entered it, not completed it, counts still for
    // the threshold, and a thread of it in that very collective (a started
    // nonblocking collective overlapped with compute is not a wait).
    std::map<std::uint64_t, std::vector<const RankEvidence*>> inside;
    for (auto* e : members)
      if (auto* c = progress_of(*e, id);
          c && c->completed < c->entered && c->since_s >= opt.stall_threshold_s && thread_inside(*e, id, c->entered))
        inside[c->entered].push_back(e);
    std::uint64_t k = 0;
    std::vector<const RankEvidence*> waiting;
    for (auto& [ord, v] : inside)
      if (c3::strict_majority(v.size(), members.size())) k = ord, waiting = v;
    if (k == 0) continue;
    // The majority's fingerprint at k.
    std::map<std::uint64_t, std::vector<const RankEvidence*>> by_fp;
    for (auto* e : waiting) by_fp[progress_of(*e, id)->fingerprint].push_back(e);
    std::uint64_t fp = 0;
    std::size_t fp_n = 0;
    for (auto& [f, v] : by_fp)
      if (v.size() > fp_n) fp = f, fp_n = v.size();
    std::vector<const RankEvidence*> behind, diverged;
    bool other = false;
    for (auto* e : members) {
      const auto* c = progress_of(*e, id);
      // No entry: it never entered a collective there, unless its table was
      // full (then nobody knows where it is).
      if (!c && e->comms_full > 0) {
        other = true;
        continue;
      }
      const std::uint64_t entered = c ? c->entered : 0;
      if (entered < k) {
        // A stopped, D-state or zombie process is a stall (the direct rule).
        if (is_stalled_state(e->state)) other = true;
        else behind.push_back(e);
      } else if (entered == k && c->completed < k && c->fingerprint != fp) {
        diverged.push_back(e);
      } else if (entered == k && c->completed < k && c->since_s < opt.stall_threshold_s) {
        other = true;  // still arriving: next gather
      }
    }
    if (other || (behind.empty() && diverged.empty())) continue;
    const bool hang = !behind.empty();
    const auto& culprits = hang ? behind : diverged;
    VerdictDraft d = draft(hang ? c3::VerdictKind::kHang : c3::VerdictKind::kDivergence,
                           c3::VerdictStatus::kAttributed, culprits);
    if (!named.insert(d.ranks).second) continue;
    json cj = json::array();
    for (auto* e : culprits) cj.push_back(culprit_brief(*e, id));
    const auto* ref = progress_of(*by_fp[fp].front(), id);
    std::vector<std::pair<bool, std::string>> lines;
    for (auto* e : members) {
      const bool culprit = std::find(culprits.begin(), culprits.end(), e) != culprits.end();
      for (auto& l : thread_lines(*e)) lines.push_back({culprit, fmt::format("rank {}: {}", e->rank, l)});
    }
    d.evidence = {
        {"rule", hang ? "threaded program, per communicator: a strict majority of the communicator's members wait "
                        "inside its collective k; these members have not entered it, while their other threads may "
                        "keep calling MPI"
                      : "threaded program, per communicator: a strict majority of the communicator's members wait "
                        "inside its collective k with one fingerprint; these members are inside k with another"},
        {"communicator", fmt::format("{:016x}", id)},
        {"communicator_collective", k},
        {"collective", c3::coll_name(ref->kind)},
        {"fingerprint", fmt::format("{:016x}", fp)},
        {"majority_count", waiting.size()},
        {"members", members.size()},
        {"waited_s", ref->since_s},
        {"culprits", cj}};
    put_list(d.evidence, "waiting", ranks_of(waiting));
    put_lines(d.evidence, "threads", std::move(lines));
    d.key = key_of(hang ? "hang" : "divergence", d.ranks, k);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace scout::scoutd::rules
