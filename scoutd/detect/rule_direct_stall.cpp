// The direct-evidence stall rule (see progress_rules.hpp).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "libc3/rank_record.hpp"
#include "libc3/signature.hpp"
#include "libc3/verdict_rules.hpp"
#include "scoutd/detect/progress_rules.hpp"
#include "common/proc_info.hpp"

namespace scout::scoutd::rules {

using nlohmann::json;


// Direct evidence needs no majority: a process stopped (T), in D state or a
// zombie for the stall threshold, with no progress for as long, is a stall
// of that rank (a 1-rank job, or 2 ranks where the other waits for it).
void add_direct_stalls(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt,
                       std::vector<VerdictDraft>& out) {
  std::set<int> named;
  for (auto& d : out)
    for (int r : d.ranks) named.insert(r);
  std::vector<const RankEvidence*> group;
  for (auto* e : live)
    if (!named.count(e->rank) && is_stalled_state(e->state) && e->state_s >= opt.stall_threshold_s &&
        e->stalled_s >= opt.stall_threshold_s)
      group.push_back(e);
  if (group.empty()) return;
  VerdictDraft d = draft(c3::VerdictKind::kStall, c3::VerdictStatus::kAttributed, group);
  json culprits = json::array();
  for (auto* e : group) {
    json c = rank_brief(*e);
    c["state_s"] = e->state_s;
    culprits.push_back(c);
  }
  std::set<int> culprit_ranks;
  for (auto* e : group) culprit_ranks.insert(e->rank);
  std::vector<std::pair<bool, std::string>> chain;
  std::vector<int> waiting;
  for (auto* e : live) {
    if (!e->p2p_call.empty() || e->in_collective || is_stalled_state(e->state))
      chain.emplace_back(culprit_ranks.count(e->rank) > 0, wait_line(*e));
    if (!e->p2p_call.empty() || e->in_collective) waiting.push_back(e->rank);
  }
  d.evidence = {{"rule", "direct evidence: the process has been stopped, in uninterruptible sleep or a zombie "
                         "for the stall threshold, with no progress"},
                {"culprits", culprits}, {"peers", live.size()},
                {"threshold_s", opt.stall_threshold_s}};
  put_list(d.evidence, "waiting", waiting);
  put_lines(d.evidence, "chain", chain);
  d.key = stall_key(group);
  out.push_back(std::move(d));
}

namespace {
// A blocking call whose only peer is the rank itself, for the threshold: a
// synchronous (or too large to buffer) send to its own rank completes only
// when a receive is posted, and a receive from itself only when a send is:
// the same thread can do neither while it waits. A deadlock of one rank.
std::vector<VerdictDraft> self_wait(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt) {
  std::vector<VerdictDraft> out;
  std::vector<const RankEvidence*> stuck;
  bool sends = false;
  for (auto* e : live) {
    const std::string& c = e->p2p_call;
    const bool send = c == "MPI_Send" || c == "MPI_Ssend" || c == "MPI_Rsend";
    const bool recv = c == "MPI_Recv" || c == "MPI_Probe" || c == "MPI_Mprobe";
    // (A threaded rank's other thread may post the other side; a stopped
    // rank is a stall.)
    if ((!send && !recv) || e->p2p_more || e->p2p_peers != std::vector<int>{e->rank} ||
        e->p2p_wait_s < opt.stall_threshold_s || e->threaded || is_stalled_state(e->state))
      continue;
    stuck.push_back(e);
    sends |= send;
  }
  if (stuck.empty()) return out;
  VerdictDraft d = draft(c3::VerdictKind::kDeadlock, c3::VerdictStatus::kAttributed, stuck);
  std::vector<std::pair<bool, std::string>> lines;
  for (auto* e : stuck) lines.push_back({true, wait_line(*e)});
  d.evidence = {{"rule", "a blocking call whose only peer is its own rank: an application deadlock of one rank"},
                {"mismatch", sends ? "the rank sends to itself and cannot post the receive while it waits (a send "
                                     "to its own rank: synchronous, or too large to buffer)"
                                   : "the rank waits to receive from itself and cannot send while it waits"}};
  put_lines(d.evidence, "chain", lines);
  d.key = key_of("deadlock-self", d.ranks, 0);
  out.push_back(std::move(d));
  return out;
}

// A collective that cannot complete: ranks inside it for the threshold on a
// communicator some of whose members have finalized (they left MPI without
// the collective the others wait in). Those that left are named, majority
// or not: with two ranks there is none, and the fact is plain.
std::vector<VerdictDraft> left_collective(const std::vector<RankEvidence>& ranks,
                                          const std::vector<const RankEvidence*>& live,
                                          const std::map<int, const RankEvidence*>& by_rank,
                                          const DetectorOptions& opt) {
  std::vector<VerdictDraft> out;
  int world = 0;
  for (auto& e : ranks) world = std::max(world, e.rank + 1);
  const std::uint64_t world_id = c3::mpi_world_identity(world);
  std::vector<const RankEvidence*> waiting, gone;
  std::set<int> gone_ranks;
  for (auto* e : live) {
    if (!e->in_collective || e->stalled_s < opt.stall_threshold_s || is_stalled_state(e->state)) continue;
    std::vector<int> members;
    if (auto m = e->comm_members.find(e->comm_id); m != e->comm_members.end()) {
      members = m->second;
    } else if (e->comm_id == world_id) {  // too large to list: the world's identity says it
      for (int r = 0; r < world; ++r) members.push_back(r);
    }
    bool any = false;
    // A member that finalized behind this collective (its last position
    // before it): one that took its part (a Bcast's root, a Reduce's
    // sender) and left is not blamed for the others still in it.
    for (int r : members)
      if (auto it = by_rank.find(r); it != by_rank.end() && it->second->finalized && it->second->seq < e->seq) {
        any = true;
        if (gone_ranks.insert(r).second) gone.push_back(it->second);
      }
    if (any) waiting.push_back(e);
  }
  if (waiting.empty()) return out;
  VerdictDraft d = draft(c3::VerdictKind::kHang, c3::VerdictStatus::kAttributed, gone);
  std::vector<std::pair<bool, std::string>> lines;
  for (auto* e : waiting) lines.push_back({false, wait_line(*e)});
  d.evidence = {{"rule", "ranks wait in a collective on a communicator some of whose members have finalized: it "
                         "cannot complete"},
                {"mismatch", "ranks called MPI_Finalize while the others wait in a collective on a communicator "
                             "they belong to"}};
  put_lines(d.evidence, "chain", lines);
  put_list(d.evidence, "finalized", std::vector<int>(gone_ranks.begin(), gone_ranks.end()));
  d.key = key_of("hang-left-collective", d.ranks, 0);
  out.push_back(std::move(d));
  return out;
}
}  // namespace

std::vector<VerdictDraft> detect_left_peers(const std::vector<RankEvidence>& ranks,
                                            const std::vector<const RankEvidence*>& live, const DetectorOptions& opt) {
  std::vector<VerdictDraft> out;
  std::map<int, const RankEvidence*> by_rank;
  for (auto& e : ranks)
    if (e.attached) by_rank[e.rank] = &e;
  std::vector<const RankEvidence*> stuck;
  std::set<int> left;
  for (auto* e : live) {
    if (e->p2p_call.empty() || e->p2p_more || e->p2p_peers.empty() || e->stalled_s < opt.stall_threshold_s) continue;
    // Named peers only: an any-source wait would need every rank of the job
    // seen finalized, and a gather decided with a quorum may miss some.
    if (std::any_of(e->p2p_peers.begin(), e->p2p_peers.end(), [](int p) { return p < 0; })) continue;
    const std::vector<int>& peers = e->p2p_peers;
    const bool all_left = !peers.empty() && std::all_of(peers.begin(), peers.end(), [&](int p) {
      auto it = by_rank.find(p);
      return it != by_rank.end() && it->second->finalized;
    });
    if (!all_left) continue;
    stuck.push_back(e);
    left.insert(peers.begin(), peers.end());
  }
  if (stuck.empty()) {
    out = self_wait(live, opt);
    return out.empty() ? left_collective(ranks, live, by_rank, opt) : out;
  }
  VerdictDraft d = draft(c3::VerdictKind::kHang, c3::VerdictStatus::kAttributed, stuck);
  std::vector<std::pair<bool, std::string>> lines;
  for (auto* e : stuck) lines.push_back({true, wait_line(*e)});
  d.evidence = {{"rule", "waits in a point-to-point call for ranks that have all finalized: no message can come"},
                {"mismatch", "the ranks it waits for called MPI_Finalize without sending what it waits for"}};
  put_lines(d.evidence, "chain", lines);
  put_list(d.evidence, "finalized", std::vector<int>(left.begin(), left.end()));
  d.key = key_of("hang-left", d.ranks, 0);
  out.push_back(std::move(d));
  return out;
}

}  // namespace scout::scoutd::rules
