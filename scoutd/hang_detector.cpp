// Progress and crash detectors (see hang_detector.hpp).
#include "scoutd/hang_detector.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "libc3/rank_record.hpp"
#include "libc3/verdict_rules.hpp"
#include "scoutd/proc_info.hpp"

namespace scout::scoutd {

using nlohmann::json;

void to_json(json& j, const RankEvidence& e) {
  j = json{{"rank", e.rank}, {"node", e.node}, {"pid", e.pid}, {"attached", e.attached},
           {"alive", e.alive}, {"finalized", e.finalized}, {"seq", e.seq},
           {"fingerprint", fmt::format("{:016x}", e.fingerprint)},
           {"comm", fmt::format("{:016x}", e.comm_id)}, {"kind", e.kind},
           {"in_collective", e.in_collective}, {"stalled_s", e.stalled_s},
           {"state", std::string(1, e.state)}, {"wchan", e.wchan}, {"death_ns", e.death_ns},
           {"syscall", e.syscall}, {"rchar", e.rchar}, {"wchar", e.wchar},
           {"steps", e.steps}, {"step_s", e.step_s}, {"compute_s", e.compute_s},
           {"wait_s", e.wait_s}};
  json cw = json::object();
  for (auto& [c, w] : e.comm_wait) cw[fmt::format("{:016x}", c)] = w;
  j["comm_wait"] = cw;
  json cm = json::object();
  for (auto& [c, m] : e.comm_members)
    if (e.comm_wait.count(c)) cm[fmt::format("{:016x}", c)] = m;  // only the ones in use
  j["comm_members"] = cm;
  if (!e.outsigs.empty()) {
    json os = json::array();
    for (auto& o : e.outsigs)
      os.push_back({fmt::format("{:016x}", o.comm), o.call, o.kind, fmt::format("{:016x}", o.sig)});
    j["outsigs"] = os;
  }
}

void from_json(const json& j, RankEvidence& e) {
  e.rank = j.at("rank").get<int>();
  e.node = j.at("node").get<std::string>();
  e.pid = j.at("pid").get<int>();
  e.attached = j.at("attached").get<bool>();
  e.alive = j.at("alive").get<bool>();
  e.finalized = j.at("finalized").get<bool>();
  e.seq = j.at("seq").get<std::uint64_t>();
  e.fingerprint = std::stoull(j.at("fingerprint").get<std::string>(), nullptr, 16);
  e.comm_id = std::stoull(j.at("comm").get<std::string>(), nullptr, 16);
  e.kind = j.at("kind").get<std::uint32_t>();
  e.in_collective = j.at("in_collective").get<bool>();
  e.stalled_s = j.at("stalled_s").get<double>();
  auto st = j.at("state").get<std::string>();
  e.state = st.empty() ? '?' : st[0];
  e.wchan = j.at("wchan").get<std::string>();
  e.death_ns = j.at("death_ns").get<std::int64_t>();
  e.syscall = j.value("syscall", -1L);
  e.rchar = j.value("rchar", -1LL);
  e.wchar = j.value("wchar", -1LL);
  e.steps = j.value("steps", 0);
  e.step_s = j.value("step_s", 0.0);
  e.compute_s = j.value("compute_s", 0.0);
  e.wait_s = j.value("wait_s", 0.0);
  if (j.contains("comm_wait") && j["comm_wait"].is_object())
    for (auto& [k, v] : j["comm_wait"].items())
      if (v.is_number()) e.comm_wait[std::stoull(k, nullptr, 16)] = v.get<double>();
  if (j.contains("comm_members") && j["comm_members"].is_object())
    for (auto& [k, v] : j["comm_members"].items())
      if (v.is_array()) e.comm_members[std::stoull(k, nullptr, 16)] = v.get<std::vector<int>>();
  if (j.contains("outsigs") && j["outsigs"].is_array())
    for (auto& o : j["outsigs"])
      if (o.is_array() && o.size() == 4)
        e.outsigs.push_back({std::stoull(o[0].get<std::string>(), nullptr, 16), o[1].get<std::uint64_t>(),
                             o[2].get<std::uint64_t>(), std::stoull(o[3].get<std::string>(), nullptr, 16)});
}

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
  d.kind = "crash";
  d.status = "attributed";
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
      d.kind = group == &behind_io ? "straggler" : group == &behind_stalled ? "stall" : "hang";
      d.status = "attributed";
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
    d.kind = "hang";
    d.status = "inconclusive";
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
    d.kind = "hang";
    d.status = "inconclusive";
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
    d.kind = "divergence";
    d.status = "attributed";
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
  d.kind = fc.outcome == c3::ExactOutcome::kInconclusive ? "divergence" : "hang";
  d.status = "inconclusive";
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
  d.key = key_of(d.kind + "-inconclusive", {}, position);
  out.push_back(std::move(d));
  return out;
}

std::vector<VerdictDraft> OutputTracker::update(const std::vector<RankEvidence>& ranks) {
  for (auto& e : ranks) {
    for (auto& o : e.outsigs) {
      auto& g = groups_[{o.comm, o.call}];
      g.by_rank[e.rank] = {o.sig, e.node};
      g.kind = o.kind;
    }
    for (auto& [c, m] : e.comm_members) comm_size_[c] = std::max(comm_size_[c], m.size());
  }
  constexpr std::size_t kMaxGroups = 8192;  // bounded memory: the oldest go first
  while (groups_.size() > kMaxGroups) groups_.erase(groups_.begin());
  std::vector<VerdictDraft> out;
  for (auto it = groups_.begin(); it != groups_.end();) {
    const auto& key = it->first;
    Group& g = it->second;
    // The world communicator publishes no member list: its size is the
    // number of ranks; otherwise the published membership.
    std::size_t size = comm_size_.count(key.first) ? comm_size_[key.first] : ranks.size();
    size = std::max(size, g.by_rank.size());
    if (g.by_rank.size() < size && ++g.age < max_age_) {
      ++it;
      continue;
    }
    std::map<std::uint64_t, int> counts;
    for (auto& [r, en] : g.by_rank) ++counts[en.sig];
    const char* kind = c3::coll_name(static_cast<std::uint32_t>(g.kind));
    if (counts.size() >= 2 && g.by_rank.size() >= 3) {
      auto best = std::max_element(counts.begin(), counts.end(),
                                   [](auto& a, auto& b) { return a.second < b.second; });
      if (2 * static_cast<std::size_t>(best->second) > size) {
        for (auto& [rank, en] : g.by_rank) {
          if (en.sig == best->first || named_.count(rank)) continue;
          named_.insert(rank);
          VerdictDraft d;
          d.kind = "sdc";
          d.status = "attributed";
          d.ranks = {rank};
          d.hosts = {en.node};
          d.evidence = {{"source", "collective_output"},
                        {"rule", "its collective output differs from a strict majority of the communicator"},
                        {"collective", kind}, {"comm", fmt::format("{:016x}", key.first)}, {"call", key.second},
                        {"signature", fmt::format("{:016x}", en.sig)},
                        {"majority_signature", fmt::format("{:016x}", best->first)},
                        {"agreeing_ranks", best->second}, {"comm_size", size},
                        {"culprits", json::array({{{"rank", rank}, {"node", en.node}}})}};
          d.key = fmt::format("sdc:output:{}", rank);
          out.push_back(std::move(d));
        }
      } else if (!inconclusive_.count(key.first)) {
        inconclusive_.insert(key.first);
        VerdictDraft d;
        d.kind = "sdc";
        d.status = "inconclusive";
        json values = json::array();
        for (auto& [sig, n] : counts) {
          json rs = json::array();
          for (auto& [rank, en] : g.by_rank)
            if (en.sig == sig) rs.push_back(rank);
          values.push_back({{"signature", fmt::format("{:016x}", sig)}, {"ranks", rs}});
        }
        d.evidence = {{"source", "collective_output"},
                      {"rule", "outputs differ and no value has a strict majority of the communicator"},
                      {"collective", kind}, {"comm", fmt::format("{:016x}", key.first)}, {"call", key.second},
                      {"comm_size", size}, {"values", values}};
        d.key = fmt::format("sdc:output:nomajority:{:016x}", key.first);
        out.push_back(std::move(d));
      }
    }
    it = groups_.erase(it);
  }
  return out;
}

}  // namespace scout::scoutd
