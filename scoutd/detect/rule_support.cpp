// What every progress rule shares (see progress_rules.hpp): the culprits' briefs,
// bounded evidence lists, wait lines, incident keys.
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

json rank_brief(const RankEvidence& e) {
  return json{{"rank", e.rank}, {"host", e.node}, {"pid", e.pid}, {"seq", e.seq},
              {"collective", c3::coll_name(e.kind)},
              {"nonblocking", (e.kind & c3::kFlagNonblocking) != 0},
              {"in_collective", e.in_collective}, {"state", std::string(1, e.state)},
              {"process", common::describe_state(e.state)}, {"wchan", e.wchan},
              {"stalled_s", e.stalled_s}, {"fingerprint", fmt::format("{:016x}", e.fingerprint)},
              {"syscall", common::syscall_name(e.syscall)}, {"rchar", e.rchar}, {"wchar", e.wchar}};
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
               ? fmt::format("rank {} is outside MPI, process {}", e.rank, common::describe_state(e.state))
               : fmt::format("rank {} is inside {}, process {}", e.rank,
                             e.p2p_call.empty() ? std::string(c3::coll_name(e.kind)) : e.p2p_call,
                             common::describe_state(e.state));
  if (!e.p2p_call.empty())
    return fmt::format("rank {} waits in {} for {} ({:.1f} s)", e.rank, e.p2p_call, peers_text(e.p2p_peers, e.p2p_more),
                       e.p2p_wait_s);
  if (e.in_collective)
    return fmt::format("rank {} waits in {} (collective {}, {:.1f} s)", e.rank, c3::coll_name(e.kind), e.seq,
                       e.stalled_s);
  if (e.gpu.present && e.seq > e.gpu.done)
    return fmt::format("rank {}: its GPU {} has {} operation(s) issued and has begun none for {:.1f} s, process {}",
                       e.rank, e.gpu.bus_id.empty() ? "?" : e.gpu.bus_id, e.seq - e.gpu.done, e.gpu.idle_s,
                       common::describe_state(e.state));
  return fmt::format("rank {} is outside MPI, process {}", e.rank, common::describe_state(e.state));
}

std::string key_of(const std::string& kind, const std::vector<int>& ranks, std::uint64_t pos) {
  std::string k = fmt::format("{}@{}:", kind, pos);
  for (int r : ranks) k += fmt::format("{},", r);
  return k;
}

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

VerdictDraft draft(c3::VerdictKind kind, c3::VerdictStatus status, const std::vector<const RankEvidence*>& culprits,
                   std::string key, json evidence) {
  VerdictDraft d;
  d.kind = kind;
  d.status = status;
  d.ranks = ranks_of(culprits);
  d.hosts = hosts_of(culprits);
  d.key = std::move(key);
  d.evidence = std::move(evidence);
  return d;
}

}  // namespace scout::scoutd::rules
