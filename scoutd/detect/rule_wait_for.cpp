// The wait-for rule: point-to-point and collective waits as a graph, its
// sinks and closed cycles (see progress_rules.hpp).
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

// The strongly connected components of a graph (Kosaraju, iteratively: no
// recursion at 100,000 ranks): each node's component, and whether an edge
// leaves the component (a component no edge leaves is a closed cycle).
struct Components {
  std::map<int, int> of;
  std::vector<bool> leaves;
};

Components components(const std::map<int, std::vector<int>>& edges) {
  static const std::vector<int> kNone;
  auto out_of = [&](int r) -> const std::vector<int>& {
    auto it = edges.find(r);
    return it == edges.end() ? kNone : it->second;
  };
  std::map<int, std::vector<int>> rev;
  for (auto& [r, to] : edges)
    for (int t : to) rev[t].push_back(r);
  std::vector<int> order;
  std::set<int> done;
  for (auto& [start, unused] : edges) {
    if (done.count(start)) continue;
    std::vector<std::pair<int, std::size_t>> stack{{start, 0}};
    done.insert(start);
    while (!stack.empty()) {
      auto& [r, i] = stack.back();
      const auto& to = out_of(r);
      if (i < to.size()) {
        const int t = to[i++];
        if (!done.count(t)) {
          done.insert(t);
          stack.push_back({t, 0});
        }
      } else {
        order.push_back(r);
        stack.pop_back();
      }
    }
  }
  Components c;
  int n = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (c.of.count(*it)) continue;
    std::vector<int> todo{*it};
    c.of[*it] = n;
    while (!todo.empty()) {
      const int r = todo.back();
      todo.pop_back();
      for (int p : rev[r])
        if (!c.of.count(p)) {
          c.of[p] = n;
          todo.push_back(p);
        }
    }
    ++n;
  }
  c.leaves.assign(static_cast<std::size_t>(n), false);
  for (auto& [r, to] : edges)
    for (int t : to)
      if (c.of.at(t) != c.of.at(r)) c.leaves[static_cast<std::size_t>(c.of.at(r))] = true;
  return c;
}

}  // namespace

// The wait-for graph of the live ranks: a rank waiting in a point-to-point
// call points at the peers it waits for (an any-source receive at every
// member of its communicator); a rank waiting in a collective at the members
// of that communicator that are not in the same collective. A rank with no
// edge is a sink: outside MPI (computing, or stopped). The culprits are the
// sinks the waiting ranks lead to, if those waiting are a strict majority
// and the sinks a strict minority; a cycle with no sink is a deadlock.
std::vector<VerdictDraft> detect_wait_for(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt,
                                          bool& pending) {
  pending = false;
  std::vector<VerdictDraft> out;
  // Collectives only: the position consensus decides (and at 100,000 ranks
  // the graph below would be built for nothing).
  const bool any_p2p = std::any_of(live.begin(), live.end(), [&](const RankEvidence* e) {
    return !is_stalled_state(e->state) && !e->p2p_call.empty() && e->stalled_s >= opt.stall_threshold_s;
  });
  if (!any_p2p) return out;
  std::map<int, const RankEvidence*> by_rank;
  for (auto* e : live) by_rank[e->rank] = e;
  // Ranks are nodes >= 0. A wait for a whole group (an any-source receive
  // at every member of a communicator; a collective at the members of its
  // communicator that have not reached it) goes through one shared node < 0
  // whose edges lead to that group: the graph stays O(ranks) where every
  // rank waits for every other (edges rank x rank at 100,000 ranks would
  // not fit in memory).
  std::map<int, std::vector<int>> edges;
  std::map<std::tuple<int, std::uint64_t, std::uint64_t, bool>, int> groups;  // (kind, comm, seq, listed) -> node
  auto group_node = [&](int kind, const RankEvidence& e, std::uint64_t comm, std::uint64_t seq) {
    auto listed = e.comm_members.find(comm);
    const bool has = listed != e.comm_members.end();
    auto [it, fresh] = groups.try_emplace({kind, comm, seq, has}, -1 - static_cast<int>(groups.size()));
    if (fresh) {
      std::vector<int> to;
      auto take = [&](int m) {
        auto r = by_rank.find(m);
        if (r == by_rank.end()) return;
        const RankEvidence* o = r->second;
        if (kind == 1 && o->in_collective && o->seq == seq) return;  // there already
        to.push_back(m);
      };
      if (has)
        for (int m : listed->second) take(m);
      else
        for (auto& [r, x] : by_rank) take(r);
      std::sort(to.begin(), to.end());
      to.erase(std::unique(to.begin(), to.end()), to.end());
      if (!to.empty()) edges[it->second] = std::move(to);
    }
    return edges.count(it->second) ? it->second : 0;
  };
  std::size_t blocked = 0;
  for (auto* e : live) {
    std::vector<int> to;
    // A stopped, D-state or zombie process waits for nobody: whatever MPI
    // call its record shows, it cannot progress. It is a sink.
    if (is_stalled_state(e->state)) continue;
    if (!e->p2p_call.empty() && e->stalled_s >= opt.stall_threshold_s) {
      for (int p : e->p2p_peers) {
        if (p >= 0) to.push_back(p);
        else if (int g = group_node(0, *e, e->p2p_any_comm, 0); g < 0) {
          // Waiting for any member but itself: a group of itself alone is no wait.
          const auto& m = edges[g];
          if (m.size() > 1 || m.front() != e->rank) to.push_back(g);
        }
      }
    } else if (e->in_collective && e->stalled_s >= opt.stall_threshold_s) {
      if (int g = group_node(1, *e, e->comm_id, e->seq); g < 0) to.push_back(g);
    }
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
    to.erase(std::remove(to.begin(), to.end(), e->rank), to.end());
    to.erase(std::remove_if(to.begin(), to.end(), [&](int r) { return r >= 0 && !by_rank.count(r); }), to.end());
    if (!to.empty()) {
      edges[e->rank] = std::move(to);
      ++blocked;
    }
  }
  if (!c3::strict_majority(blocked, live.size())) return out;
  // Sinks reached from the waiting ranks.
  std::set<int> sinks, seen;
  std::vector<int> todo;
  for (auto& [r, to] : edges) todo.push_back(r);
  while (!todo.empty()) {
    int r = todo.back();
    todo.pop_back();
    if (!seen.insert(r).second) continue;
    auto it = edges.find(r);
    if (it == edges.end()) {
      sinks.insert(r);
      continue;
    }
    for (int t : it->second) todo.push_back(t);
  }
  std::vector<std::pair<bool, std::string>> chain;
  for (auto* e : live)
    if (edges.count(e->rank) || sinks.count(e->rank)) chain.emplace_back(sinks.count(e->rank) > 0, wait_line(*e));
  if (sinks.empty()) {
    // Everyone waits for someone who waits. The deadlocked ranks are the
    // closed cycles: strongly connected components no edge leaves (the
    // others wait for them). Kosaraju, iteratively.
    std::vector<int> nodes;
    for (auto& [r, to] : edges) nodes.push_back(r);
    const Components cc = components(edges);
    auto& comp = cc.of;
    const int ncomp = static_cast<int>(cc.leaves.size());
    const auto& leaves = cc.leaves;
    std::vector<const RankEvidence*> group;
    json cycles = json::array();
    for (int c = 0; c < ncomp; ++c) {
      if (leaves[static_cast<std::size_t>(c)]) continue;
      json cyc = json::array();
      for (int r : nodes)
        if (r >= 0 && comp.at(r) == c) {  // (a group's node is no rank)
          group.push_back(by_rank[r]);
          cyc.push_back(r);
        }
      if (cyc.size() >= 2) cycles.push_back(cyc);
    }
    if (group.size() < 2) return out;
    // Which way each rank's wait goes: 'r' it can only receive, 's' only
    // send, '?' both or unknown. A completion call's requests go the way the
    // probe recorded (record version 9: `p2p_dirs`, published only when they
    // are all the requests the rank has in flight); without that, a Wait is
    // unknown, and a Test loop always is.
    auto dir_of = [](const RankEvidence* e) -> char {
      const std::string& c = e->p2p_call;
      if (c == "MPI_Recv" || c == "MPI_Probe" || c == "MPI_Mprobe") return 'r';
      if (c == "MPI_Send" || c == "MPI_Ssend" || c == "MPI_Rsend") return 's';
      // A loop of MPI_Test* runs the program between its calls: it may
      // still send or receive what its peer waits for.
      if (c.rfind("MPI_Test", 0) == 0) return '?';
      const std::string& d = e->p2p_dirs;
      if (d.empty() || d.size() != e->p2p_peers.size() || e->p2p_more) return '?';
      if (d.find_first_not_of('r') == std::string::npos) return 'r';
      if (d.find_first_not_of('s') == std::string::npos) return 's';
      return '?';
    };
    // Every rank in one cycle through Wait/Test calls whose requests'
    // directions are unknown: they may be satisfied already, or be a send
    // and its matching receive, so it may as well be a communication hang.
    // Only a cycle of waits that must each receive or send (or a strict part
    // of the job) is named a deadlock.
    bool through_requests = false;
    for (auto* e : group)
      through_requests |= (e->p2p_call.rfind("MPI_Wait", 0) == 0 || e->p2p_call.rfind("MPI_Test", 0) == 0) &&
                          dir_of(e) == '?';
    // Two ranks, one blocked sending to the other, the other receiving from
    // it: a transfer that does not complete (a stuck link, or a tag or
    // communicator that does not match), not a cycle of waits.
    auto sending = [&](const RankEvidence* e) { return dir_of(e) == 's'; };
    const bool one_transfer = group.size() == 2 && dir_of(group[0]) != '?' && dir_of(group[1]) != '?' &&
                              dir_of(group[0]) != dir_of(group[1]);
    if (one_transfer) {
      // Their tags and communicators, where the record holds them: a send
      // that no posted receive matches is a deadlock of the two.
      const RankEvidence* snd = sending(group[0]) ? group[0] : group[1];
      const RankEvidence* rcv = snd == group[0] ? group[1] : group[0];
      std::string why;
      // (Only intracommunicators: the probe publishes their members, and
      // the two sides of an intercommunicator have different identities.)
      if (snd->p2p_comm && rcv->p2p_comm && snd->p2p_comm != rcv->p2p_comm &&
          snd->comm_members.count(snd->p2p_comm) && rcv->comm_members.count(rcv->p2p_comm))
        why = "no receive matches the send (sent on another communicator than the receive waits on)";
      else if (snd->p2p_tag >= 0 && rcv->p2p_tag >= 0 && snd->p2p_tag != rcv->p2p_tag)
        why = fmt::format("no receive matches the send (tag {} sent, tag {} awaited)", snd->p2p_tag, rcv->p2p_tag);
      if (!why.empty()) {
        VerdictDraft d = draft(c3::VerdictKind::kDeadlock, c3::VerdictStatus::kAttributed, group);
        json cycle_lines = json::array();
        for (auto* e : group) cycle_lines.push_back(wait_line(*e));
        d.evidence = {{"rule", "a blocking send and a receive from its sender that cannot match: an application "
                               "deadlock"},
                      {"cycles", cycles}, {"chain", cycle_lines}, {"peers", live.size()}, {"mismatch", why}};
        d.key = key_of("deadlock", ranks_of(group), 0);
        out.push_back(std::move(d));
        return out;
      }
      VerdictDraft d = draft(c3::VerdictKind::kHang, c3::VerdictStatus::kInconclusive, {});
      d.evidence = {{"rule", "a blocking send and the receive from its sender do not complete: a stuck transfer "
                             "between the two ranks, or a tag or communicator that does not match"}};
      put_lines(d.evidence, "chain", chain);
      d.key = key_of("hang-transfer", ranks_of(group), 0);
      out.push_back(std::move(d));
      return out;
    }
    if (group.size() == live.size() && through_requests) {
      VerdictDraft d = draft(c3::VerdictKind::kHang, c3::VerdictStatus::kInconclusive, {});
      d.evidence = {{"rule", "every rank waits inside MPI for another through its requests: a deadlock or a "
                             "communication hang, no rank stands out"}};
      put_lines(d.evidence, "chain", chain);
      d.key = key_of("hang-waitfor-cycle", {}, 0);
      out.push_back(std::move(d));
      return out;
    }
    VerdictDraft d = draft(c3::VerdictKind::kDeadlock, c3::VerdictStatus::kAttributed, group);
    json cycle_lines = json::array();
    for (auto* e : group) cycle_lines.push_back(wait_line(*e));
    d.evidence = {{"rule", "ranks blocked inside MPI on each other in a cycle: an application deadlock"},
                  {"cycles", cycles}, {"chain", cycle_lines}, {"peers", live.size()}};
    // Why, in words, from the calls they block in.
    std::size_t recvs = 0, sends = 0;
    for (auto* e : group) {
      recvs += dir_of(e) == 'r';
      sends += dir_of(e) == 's';
    }
    d.evidence["mismatch"] =
        recvs == group.size() ? "each rank waits to receive from the next before it sends (both sides receiving)"
        : sends == group.size()
            ? "each rank sends to the next before it receives, and no send completes before its receive is "
              "posted (both sides sending: synchronous, or too large to buffer)"
            : "each rank waits for the next in a cycle";
    put_lines(d.evidence, "waiting", chain);
    d.key = key_of("deadlock", d.ranks, 0);
    out.push_back(std::move(d));
    return out;
  }
  if (!c3::strict_minority(sinks.size(), live.size())) {
    VerdictDraft d = draft(c3::VerdictKind::kHang, c3::VerdictStatus::kInconclusive, {});
    std::set<std::uint64_t> comms;
    for (auto* e : live)
      if (!e->p2p_call.empty()) comms.insert(e->p2p_any_comm ? e->p2p_any_comm : e->p2p_comm);
    json cl = json::array();
    for (auto c : comms) cl.push_back(fmt::format("{:016x}", c));
    d.evidence = {{"rule", "the waiting ranks lead to no strict minority of ranks outside MPI"},
                  {"communicators", cl}};
    put_lines(d.evidence, "chain", chain);
    put_list(d.evidence, "outside_mpi", std::vector<int>(sinks.begin(), sinks.end()));
    d.key = key_of("hang-waitfor-inconclusive", {}, 0);
    out.push_back(std::move(d));
    return out;
  }
  std::vector<const RankEvidence*> stalled, io, gpu, young_gpu, running;
  for (int r : sinks) {
    const RankEvidence* e = by_rank[r];
    // A rank that waits itself, only not yet for the threshold (its wait
    // began later than the others'), has no edges yet: not a culprit.
    if (!is_stalled_state(e->state) && (!e->p2p_call.empty() || e->in_collective)) continue;
    if (is_stalled_state(e->state)) stalled.push_back(e);
    else if (common::in_io_syscall(e->syscall)) io.push_back(e);
    // An NCCL rank whose host issued work its GPU has not begun, and whose
    // GPU completed nothing for the threshold: the GPU stopped.
    else if (e->gpu.present && e->gpu.tracking && gpu_stopped(*e, opt))
      gpu.push_back(e);
    else if (e->gpu.present && e->gpu.tracking && gpu_holding(*e)) young_gpu.push_back(e);
    else running.push_back(e);
  }
  // Who waits for whom, backwards: a rank's waiters are the ranks with an
  // edge to it, and those with an edge to a group it belongs to.
  std::map<int, std::vector<int>> waiters;
  for (auto& [r, to] : edges)
    for (int t : to) waiters[t].push_back(r);
  auto waiters_of = [&](int rank) {
    std::vector<int> w;
    for (int r : waiters[rank]) {
      if (r >= 0) w.push_back(r);
      else
        for (int x : waiters[r]) w.push_back(x);
    }
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
    return w;
  };
  // A sink whose GPU holds work but completed something within the
  // threshold: its own clock decides. Naming it `hang` now, because its
  // waiters' clocks got there first, would give the same fault another kind
  // under load (a pipeline's receivers wait per rank, so the GPU rule's
  // per-communicator deferral does not see them). Bounded as there, by its
  // own waiters (not ranks stuck elsewhere for longer): past twice the
  // threshold of theirs it is a hang.
  for (auto* e : young_gpu) {
    std::vector<const RankEvidence*> its;
    for (int r : waiters_of(e->rank)) its.push_back(by_rank[r]);
    if (!its.empty() && may_defer(its, opt)) pending = true;
    else running.push_back(e);
  }
  std::vector<int> waiting;
  for (auto& [r, to] : edges)
    if (r >= 0) waiting.push_back(r);
  for (auto* group : {&stalled, &io, &gpu, &running}) {
    if (group->empty()) continue;
    const auto kind = group == &stalled ? c3::VerdictKind::kStall
                      : group == &io    ? c3::VerdictKind::kStraggler
                      : group == &gpu   ? c3::VerdictKind::kGpuHang
                                        : c3::VerdictKind::kHang;
    VerdictDraft d = draft(kind, c3::VerdictStatus::kAttributed, *group);
    json culprits = json::array();
    json waited_by = json::object(), waited_by_count = json::object();
    for (auto* e : *group) {
      culprits.push_back(group == &gpu ? gpu_brief(*e) : rank_brief(*e));
      auto w = waiters_of(e->rank);
      waited_by_count[std::to_string(e->rank)] = w.size();
      if (w.size() > kListMax) w.resize(kListMax);
      waited_by[std::to_string(e->rank)] = w;
    }
    d.evidence = {{"rule", "wait-for graph: the waiting ranks (a strict majority) lead to these ranks, outside MPI"},
                  {"culprits", culprits},
                  {"waited_by", waited_by},
                  {"waited_by_count", waited_by_count},
                  {"peers", live.size()}};
    put_lines(d.evidence, "chain", chain);
    put_list(d.evidence, "waiting", waiting);
    if (group == &io) d.evidence["type"] = "io";
    if (group == &gpu)
      d.evidence["rule"] = "wait-for graph: the waiting ranks (a strict majority) lead to these ranks, whose GPUs have "
                           "work issued and have not begun it";
    // As below: a continued rank still waited for is the same incident.
    d.key = group == &gpu ? key_of("gpu_hang", d.ranks, (*group).front()->gpu.done + 1) : stall_key(*group);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace scout::scoutd::rules
