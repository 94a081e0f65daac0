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

json gpu_brief(const RankEvidence& e) {
  json j = rank_brief(e);
  j["gpu"] = {{"bus_id", e.gpu.bus_id}, {"device", e.gpu.device}, {"issued", e.seq},
              {"started", e.gpu.started}, {"done", e.gpu.done}, {"idle_s", e.gpu.idle_s}};
  return j;
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

// A verdict names its culprits in full; the ranks around them (those that
// wait, their wait lines, their positions) are bounded, so that a verdict at
// 100,000 ranks is a ledger row of kilobytes: at most kListMax of them, and
// `<name>_count` says how many there were.
constexpr std::size_t kListMax = 64;

void put_list(json& ev, const std::string& name, std::vector<int> ranks) {
  ev[name + "_count"] = ranks.size();
  if (ranks.size() > kListMax) ranks.resize(kListMax);
  ev[name] = ranks;
}

// Wait lines, in rank order; when they must be cut, the culprits' lines
// (first = true) are kept before the others.
void put_lines(json& ev, const std::string& name, std::vector<std::pair<bool, std::string>> lines) {
  ev[name + "_count"] = lines.size();
  if (lines.size() > kListMax) {
    std::stable_partition(lines.begin(), lines.end(), [](auto& l) { return l.first; });
    lines.resize(kListMax);
  }
  json a = json::array();
  for (auto& l : lines) a.push_back(std::move(l.second));
  ev[name] = std::move(a);
}

// A stall's incident: the culprits and where each stopped (collective
// position and messages), whichever rule names them first.
std::string stall_key(const std::vector<const RankEvidence*>& group) {
  std::uint64_t seq = UINT64_MAX, ops = UINT64_MAX;
  for (auto* e : group) {
    seq = std::min(seq, e->seq);
    ops = std::min(ops, e->p2p_ops);
  }
  std::string k = fmt::format("behind-stall@{}.{}:", seq, ops);
  std::vector<int> r;
  for (auto* e : group) r.push_back(e->rank);
  std::sort(r.begin(), r.end());
  for (int x : r) k += fmt::format("{},", x);
  return k;
}

std::string peers_text(const std::vector<int>& peers, bool more) {
  std::string t;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    if (i) t += i + 1 == peers.size() && !more ? " and " : ", ";
    t += peers[i] < 0 ? std::string("any source") : std::to_string(peers[i]);
  }
  if (more) t += " and more";
  return t;
}

// "rank 0 waits in MPI_Recv for 1 (12.3 s)"; "rank 1 is outside MPI, process stopped (T)".
std::string wait_line(const RankEvidence& e) {
  if (is_stalled_state(e.state))
    return e.p2p_call.empty() && !e.in_collective
               ? fmt::format("rank {} is outside MPI, process {}", e.rank, describe_state(e.state))
               : fmt::format("rank {} is inside {}, process {}", e.rank,
                             e.p2p_call.empty() ? std::string(c3::coll_name(e.kind)) : e.p2p_call,
                             describe_state(e.state));
  if (!e.p2p_call.empty())
    return fmt::format("rank {} waits in {} for {} ({:.1f} s)", e.rank, e.p2p_call, peers_text(e.p2p_peers, e.p2p_more),
                       e.p2p_wait_s);
  if (e.in_collective)
    return fmt::format("rank {} waits in {} (collective {}, {:.1f} s)", e.rank, c3::coll_name(e.kind), e.seq,
                       e.stalled_s);
  if (e.gpu.present && e.seq > e.gpu.done)
    return fmt::format("rank {}: its GPU {} has {} operation(s) issued and has begun none for {:.1f} s, process {}",
                       e.rank, e.gpu.bus_id.empty() ? "?" : e.gpu.bus_id, e.seq - e.gpu.done, e.gpu.idle_s,
                       describe_state(e.state));
  return fmt::format("rank {} is outside MPI, process {}", e.rank, describe_state(e.state));
}

std::string key_of(const std::string& kind, const std::vector<int>& ranks, std::uint64_t pos) {
  std::string k = fmt::format("{}@{}:", kind, pos);
  for (int r : ranks) k += fmt::format("{},", r);
  return k;
}

}  // namespace

namespace {
const char* signal_name(long long sig) {
  switch (sig) {
    case 11: return "SIGSEGV";
    case 7: return "SIGBUS";
    case 8: return "SIGFPE";
    case 4: return "SIGILL";
    case 6: return "SIGABRT";
    default: return "signal";
  }
}

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
  // An abort names the first caller whatever the others do; a fatal signal
  // in every rank at once is the program's, not one rank's.
  bool abort = false;
  for (auto* e : early) abort |= e->end_kind == "abort";
  std::size_t observed = 0;
  for (auto& e : ranks)
    if (e.attached) ++observed;
  if (!abort && 2 * early.size() >= observed) return std::nullopt;
  if (abort) {
    std::vector<const RankEvidence*> aborted;
    for (auto* e : early)
      if (e->end_kind == "abort") aborted.push_back(e);
    early = aborted;
  }
  VerdictDraft d;
  d.kind = abort ? c3::VerdictKind::kAbort : c3::VerdictKind::kCrash;
  d.status = c3::VerdictStatus::kAttributed;
  d.ranks = ranks_of(early);
  d.hosts = hosts_of(early);
  json culprits = json::array();
  for (auto* e : early) {
    json c = rank_brief(*e);
    c["end"] = e->end_kind;
    if (abort) {
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
  d.evidence = {{"rule", abort ? "called MPI_Abort first: the application ended the job"
                               : "the first rank killed by a fatal signal"},
                {"summary", abort ? fmt::format("rank {} called MPI_Abort with error code {}", f.rank, f.end_code)
                                  : f.end_code == 6 ? fmt::format("rank {} got SIGABRT (abort)", f.rank)
                                                    : fmt::format("rank {} got {} at address 0x{:x}", f.rank,
                                                                  signal_name(f.end_code), f.end_addr)},
                {"culprits", culprits},
                {"later", later},
                {"peers_observed", observed}};
  d.key = key_of(abort ? "abort" : "crash", d.ranks, 0);
  return d;
}
}  // namespace

std::optional<VerdictDraft> detect_crash(const std::vector<RankEvidence>& ranks, const DetectorOptions& opt,
                                         bool* pending) {
  if (auto d = detect_end_event(ranks, opt)) return d;
  std::vector<const RankEvidence*> dead;
  for (auto& e : ranks)
    if (e.attached && !e.alive && !e.finalized && e.death_ns > 0) dead.push_back(&e);
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
  // a whole job going down at once (Ctrl-C, scancel) localises nothing.
  if (2 * early.size() >= observed) return std::nullopt;
  VerdictDraft d;
  d.kind = c3::VerdictKind::kCrash;
  d.status = c3::VerdictStatus::kAttributed;
  d.ranks = ranks_of(early);
  d.hosts = hosts_of(early);
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

namespace {

// The wait-for graph of the live ranks: a rank waiting in a point-to-point
// call points at the peers it waits for (an any-source receive at every
// member of its communicator); a rank waiting in a collective at the members
// of that communicator that are not in the same collective. A rank with no
// edge is a sink: outside MPI (computing, or stopped). The culprits are the
// sinks the waiting ranks lead to, if those waiting are a strict majority
// and the sinks a strict minority; a cycle with no sink is a deadlock.
std::vector<VerdictDraft> detect_wait_for(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt) {
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
  if (2 * blocked <= live.size()) return out;
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
    std::map<int, std::vector<int>> rev;
    for (auto& [r, to] : edges)
      for (int t : to) rev[t].push_back(r);
    std::vector<int> order;
    std::set<int> done;
    for (int start : nodes) {
      if (done.count(start)) continue;
      std::vector<std::pair<int, std::size_t>> stack{{start, 0}};
      done.insert(start);
      while (!stack.empty()) {
        auto& [r, i] = stack.back();
        const auto& to = edges[r];
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
    std::map<int, int> comp;
    int ncomp = 0;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      if (comp.count(*it)) continue;
      std::vector<int> todo2{*it};
      comp[*it] = ncomp;
      while (!todo2.empty()) {
        int r = todo2.back();
        todo2.pop_back();
        for (int p : rev[r])
          if (!comp.count(p)) {
            comp[p] = ncomp;
            todo2.push_back(p);
          }
      }
      ++ncomp;
    }
    std::vector<bool> leaves(static_cast<std::size_t>(ncomp), false);
    for (auto& [r, to] : edges)
      for (int t : to)
        if (comp[t] != comp[r]) leaves[static_cast<std::size_t>(comp[r])] = true;
    std::vector<const RankEvidence*> group;
    json cycles = json::array();
    for (int c = 0; c < ncomp; ++c) {
      if (leaves[static_cast<std::size_t>(c)]) continue;
      json cyc = json::array();
      for (int r : nodes)
        if (r >= 0 && comp[r] == c) {  // (a group's node is no rank)
          group.push_back(by_rank[r]);
          cyc.push_back(r);
        }
      if (cyc.size() >= 2) cycles.push_back(cyc);
    }
    if (group.size() < 2) return out;
    // Every rank in one cycle through Wait/Test calls: their requests may be
    // satisfied already (the graph cannot tell), so it may as well be a
    // communication hang. Only a cycle of calls that must each receive or
    // send (or a strict part of the job) is named a deadlock.
    bool through_requests = false;
    for (auto* e : group) through_requests |= e->p2p_call.rfind("MPI_Wait", 0) == 0 || e->p2p_call.rfind("MPI_Test", 0) == 0;
    if (group.size() == live.size() && through_requests) {
      VerdictDraft d;
      d.kind = c3::VerdictKind::kHang;
      d.status = c3::VerdictStatus::kInconclusive;
      d.evidence = {{"rule", "every rank waits inside MPI for another through its requests: a deadlock or a "
                             "communication hang, no rank stands out"}};
      put_lines(d.evidence, "chain", chain);
      d.key = key_of("hang-waitfor-cycle", {}, 0);
      out.push_back(std::move(d));
      return out;
    }
    VerdictDraft d;
    d.kind = c3::VerdictKind::kDeadlock;
    d.status = c3::VerdictStatus::kAttributed;
    d.ranks = ranks_of(group);
    d.hosts = hosts_of(group);
    json cycle_lines = json::array();
    for (auto* e : group) cycle_lines.push_back(wait_line(*e));
    d.evidence = {{"rule", "ranks blocked inside MPI on each other in a cycle: an application deadlock"},
                  {"cycles", cycles}, {"chain", cycle_lines}, {"peers", live.size()}};
    put_lines(d.evidence, "waiting", chain);
    d.key = key_of("deadlock", d.ranks, 0);
    out.push_back(std::move(d));
    return out;
  }
  if (2 * sinks.size() >= live.size()) {
    VerdictDraft d;
    d.kind = c3::VerdictKind::kHang;
    d.status = c3::VerdictStatus::kInconclusive;
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
  std::vector<const RankEvidence*> stalled, io, gpu, running;
  for (int r : sinks) {
    const RankEvidence* e = by_rank[r];
    // A rank that waits itself, only not yet for the threshold (its wait
    // began later than the others'), has no edges yet: not a culprit.
    if (!is_stalled_state(e->state) && (!e->p2p_call.empty() || e->in_collective)) continue;
    if (is_stalled_state(e->state)) stalled.push_back(e);
    else if (in_io_syscall(e->syscall)) io.push_back(e);
    // An NCCL rank whose host issued work its GPU has not begun, and whose
    // GPU completed nothing for the threshold: the GPU stopped.
    else if (e->gpu.present && e->gpu.tracking && e->seq > e->gpu.done && e->gpu.started == e->gpu.done &&
             e->gpu.idle_s >= opt.stall_threshold_s)
      gpu.push_back(e);
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
  std::vector<int> waiting;
  for (auto& [r, to] : edges)
    if (r >= 0) waiting.push_back(r);
  for (auto* group : {&stalled, &io, &gpu, &running}) {
    if (group->empty()) continue;
    VerdictDraft d;
    d.kind = group == &stalled ? c3::VerdictKind::kStall
             : group == &io    ? c3::VerdictKind::kStraggler
             : group == &gpu   ? c3::VerdictKind::kGpuHang
                               : c3::VerdictKind::kHang;
    d.status = c3::VerdictStatus::kAttributed;
    d.ranks = ranks_of(*group);
    d.hosts = hosts_of(*group);
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
  VerdictDraft d;
  d.kind = c3::VerdictKind::kStall;
  d.status = c3::VerdictStatus::kAttributed;
  d.ranks = ranks_of(group);
  d.hosts = hosts_of(group);
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

std::vector<VerdictDraft> detect_consensus(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt);

// GPU ranks (NCCL): the host issues operations and the GPU runs them later,
// so a stopped GPU does not stop its host at once. When a strict majority
// of the ranks is stuck and the GPUs of a strict majority sit inside the
// same operation P (begun, not completed), a rank whose GPU has work issued
// but has not begun P (it completed less than P, and its GPU made no
// progress for the threshold) is the one the others wait for: gpu_hang,
// naming its GPU. Every GPU inside P (divergent fingerprints, or a
// communication hang) and a host that stopped issuing (its issue position
// is behind) are left to the rules below: a GPU rank counts as waiting
// while its GPU is inside an operation.
// A GPU that stopped: it has work issued, is inside no operation, and
// completed nothing for the threshold. (A stopped, D-state or zombie
// process's record is frozen, its GPU part too: that is a stall instead.)
bool gpu_stopped(const RankEvidence& e, const DetectorOptions& opt) {
  return !is_stalled_state(e.state) && e.seq > e.gpu.done && e.gpu.started == e.gpu.done &&
         e.gpu.idle_s >= opt.stall_threshold_s;
}

const RankEvidence::Gpu::CommOps* comm_ops_of(const RankEvidence& e, std::uint64_t id) {
  for (auto& c : e.gpu.comms)
    if (c.id == id) return &c;
  return nullptr;
}

// Per communicator (tensor, pipeline and data parallel groups number their
// operations apart): when a strict majority of a communicator's members
// (the ranks that list it) have their GPUs inside its operation k, a member
// whose GPU completed less than k on it and stopped is the one they wait for.
std::vector<VerdictDraft> detect_gpu_per_comm(const std::vector<const RankEvidence*>& gpus, const DetectorOptions& opt) {
  std::vector<VerdictDraft> out;
  // Each communicator's members, in one pass (tensor-parallel groups of 8
  // at 100,000 ranks are 12,500 communicators).
  std::map<std::uint64_t, std::vector<const RankEvidence*>> by_comm;
  for (auto* e : gpus)
    for (auto& c : e->gpu.comms) {
      auto& v = by_comm[c.id];
      if (v.empty() || v.back() != e) v.push_back(e);
    }
  std::set<std::vector<int>> named;
  for (auto& [id, members] : by_comm) {
    if (members.size() < 2) continue;
    std::map<std::uint64_t, std::vector<const RankEvidence*>> inside;
    for (auto* e : members) {
      auto* c = comm_ops_of(*e, id);
      if (c->begun > c->done) inside[c->done + 1].push_back(e);
    }
    std::uint64_t k = 0;
    std::vector<const RankEvidence*> waiting;
    for (auto& [op, v] : inside)
      if (2 * v.size() > members.size()) k = op, waiting = v;
    if (k == 0) continue;
    std::vector<const RankEvidence*> culprits;
    bool other = false;
    for (auto* e : members) {
      auto* c = comm_ops_of(*e, id);
      if (c->begun > c->done && c->done + 1 == k) continue;
      // Its host issued k (a host that did not is a host stall or hang).
      if (c->done < k && c->issued >= k && gpu_stopped(*e, opt)) culprits.push_back(e);
      else other = true;
    }
    if (culprits.empty() || other) continue;
    VerdictDraft d;
    d.kind = c3::VerdictKind::kGpuHang;
    d.status = c3::VerdictStatus::kAttributed;
    d.ranks = ranks_of(culprits);
    if (!named.insert(d.ranks).second) continue;  // the same GPUs through another communicator
    d.hosts = hosts_of(culprits);
    json cj = json::array();
    for (auto* e : culprits) cj.push_back(gpu_brief(*e));
    const RankEvidence* ref = waiting.front();
    const std::uint64_t op = ref->gpu.done + 1;  // the global position, in the reference rank's numbering
    d.evidence = {{"rule", "the GPUs of a strict majority of a communicator's members wait inside its operation k; "
                           "these members' GPUs have not begun it and stopped"},
                  {"communicator", fmt::format("{:016x}", id)},
                  {"communicator_op", k},
                  {"operation", op},
                  {"collective", ref->seq == op ? c3::coll_name(ref->kind) : "unknown"},
                  {"majority_count", waiting.size()},
                  {"members", members.size()},
                  {"peers", gpus.size()},
                  {"culprits", cj}};
    put_list(d.evidence, "waiting", ranks_of(waiting));
    d.key = key_of("gpu_hang", d.ranks, k);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<VerdictDraft> detect_gpu(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt) {
  std::vector<VerdictDraft> out;
  std::vector<const RankEvidence*> gpus;
  for (auto* e : live)
    if (e->gpu.present && e->gpu.tracking) gpus.push_back(e);
  if (gpus.size() < 2 || gpus.size() != live.size()) return out;
  std::size_t stuck = 0;
  for (auto* e : gpus) stuck += e->stalled_s >= opt.stall_threshold_s;
  if (2 * stuck <= gpus.size()) return out;
  if (out = detect_gpu_per_comm(gpus, opt); !out.empty()) return out;
  // Without per-communicator tables (more communicators than a record
  // lists): the same rule on the ranks' global positions.
  std::map<std::uint64_t, std::vector<const RankEvidence*>> inside;  // operation -> ranks inside it
  for (auto* e : gpus)
    if (e->gpu.started > e->gpu.done) inside[e->gpu.done + 1].push_back(e);
  std::uint64_t op = 0;
  std::vector<const RankEvidence*> waiting;
  for (auto& [p, v] : inside)
    if (2 * v.size() > gpus.size()) op = p, waiting = v;
  if (op == 0) return out;
  std::vector<const RankEvidence*> culprits, others;
  for (auto* e : gpus) {
    if (e->gpu.started > e->gpu.done && e->gpu.done + 1 == op) continue;
    if (e->seq >= op && e->gpu.done < op && gpu_stopped(*e, opt)) culprits.push_back(e);
    else
      others.push_back(e);
  }
  const RankEvidence* ref = waiting.front();
  for (auto* e : waiting)
    if (e->seq == op) { ref = e; break; }
  const std::vector<int> waiting_ranks = ranks_of(waiting);
  if (!culprits.empty() && others.empty()) {
    VerdictDraft d;
    d.kind = c3::VerdictKind::kGpuHang;
    d.status = c3::VerdictStatus::kAttributed;
    d.ranks = ranks_of(culprits);
    d.hosts = hosts_of(culprits);
    json cj = json::array();
    for (auto* e : culprits) cj.push_back(gpu_brief(*e));
    d.evidence = {{"rule", "the GPUs of a strict majority wait inside operation P; these GPUs have P issued "
                           "and have not begun it"},
                  {"operation", op},
                  {"collective", ref->seq == op ? c3::coll_name(ref->kind) : "unknown"},
                  {"communicator", fmt::format("{:016x}", ref->seq == op ? ref->comm_id : 0)},
                  {"majority_count", waiting.size()},
                  {"peers", gpus.size()},
                  {"culprits", cj}};
    put_list(d.evidence, "waiting", waiting_ranks);
    d.key = key_of("gpu_hang", d.ranks, op);
    out.push_back(std::move(d));
    return out;
  }
  return out;
}

}  // namespace

std::vector<VerdictDraft> detect_progress(const std::vector<RankEvidence>& ranks,
                                          const DetectorOptions& opt) {
  std::vector<const RankEvidence*> live;
  for (auto& e : ranks)
    if (e.attached && e.alive && !e.finalized) live.push_back(&e);
  std::vector<VerdictDraft> out;
  if (live.size() >= 2) {
    out = detect_gpu(live, opt);
    if (out.empty()) out = detect_wait_for(live, opt);
    if (out.empty()) out = detect_consensus(live, opt);
  }
  bool inconclusive_only = std::all_of(out.begin(), out.end(), [](auto& d) {
    return d.status == c3::VerdictStatus::kInconclusive;
  });
  if (inconclusive_only) {
    std::vector<VerdictDraft> direct;
    add_direct_stalls(live, opt, direct);
    if (!direct.empty()) return direct;  // a named rank beats "nobody stands out"
  } else {
    add_direct_stalls(live, opt, out);
  }
  return out;
}

namespace {

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
  if (2 * stuck <= live.size() || waiting == 0) return out;

  std::vector<std::uint64_t> pos;
  for (auto* e : live) pos.push_back(e->seq);
  auto pc = c3::exact_consensus(pos);
  std::vector<int> waiting_ranks;
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
    return out;
  }
  if (pc.outcome == c3::ExactOutcome::kInconclusive) {
    VerdictDraft d;
    d.kind = c3::VerdictKind::kHang;
    d.status = c3::VerdictStatus::kInconclusive;
    // Where the ranks are: how many at each position (the most crowded
    // kListMax positions), and each rank's own for the first kListMax.
    json positions = json::object();
    std::map<std::uint64_t, std::size_t> at;
    for (auto* e : live) {
      if (positions.size() < kListMax) positions[std::to_string(e->rank)] = e->seq;
      ++at[e->seq];
    }
    std::vector<std::pair<std::size_t, std::uint64_t>> crowd;
    for (auto& [p, n] : at) crowd.push_back({n, p});
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
  // Everyone at the same position.
  const std::uint64_t position = *pc.majority_value;
  bool all_inside = std::all_of(live.begin(), live.end(), [](auto* e) { return e->in_collective; });
  if (!all_inside) {
    VerdictDraft d;
    d.kind = c3::VerdictKind::kHang;
    d.status = c3::VerdictStatus::kInconclusive;
    d.evidence = {{"rule", "same collective position, some ranks waiting and some not"},
                  {"position", position}};
    put_list(d.evidence, "waiting", waiting_ranks);
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
  std::vector<int> members;
  for (auto* e : live) {
    comms.insert(e->comm_id);
    members.push_back(e->rank);
  }
  json comm_list = json::array();
  for (auto c : comms)
    if (comm_list.size() < kListMax) comm_list.push_back(fmt::format("{:016x}", c));
  d.evidence = {{"rule", fc.outcome == c3::ExactOutcome::kInconclusive
                             ? "same position, no strict majority of collective fingerprints"
                             : "every member waits in the same collective: communication hang, "
                               "no rank is behind"},
                {"position", position},
                {"collective", c3::coll_name(live.front()->kind)},
                {"communicators", comm_list},
                {"communicators_count", comms.size()}};
  put_list(d.evidence, "members", members);
  d.key = key_of(std::string(c3::to_string(d.kind)) + "-inconclusive", {}, position);
  out.push_back(std::move(d));
  return out;
}

}  // namespace

}  // namespace scout::scoutd
