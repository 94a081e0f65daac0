// Compute straggler detection (see straggler_detector.hpp).
#include "scoutd/detect/straggler_detector.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/log.hpp"
#include "scoutd/detect/late_sender.hpp"

namespace scout::scoutd {

using nlohmann::json;

std::string StragglerTracker::key_for(int rank) { return fmt::format("straggler:compute:{}", rank); }

double absolute_guard(double floor_s, double jitter_k, std::vector<double> jitters) {
  // A tenth of the median (0.2 ms at least) named 1.3x stragglers at 5 ms
  // steps, but on an oversubscribed host (CI: 6 ranks and 3 scoutds on 2
  // cores) it also named a rank that shared its core: a fraction of the
  // step does not know the host's load, the steps' own spread does.
  // Unknown (0: an older scoutd, too few steps) or malformed: not counted.
  std::erase_if(jitters, [](double j) { return !(j > 0); });
  if (jitters.empty()) return floor_s;
  return std::max(floor_s, jitter_k * c3::median(std::move(jitters)));
}

StragglerTracker::Result StragglerTracker::update(const std::vector<RankEvidence>& ranks,
                                                  const std::set<std::string>& open, double now_s) {
  Result res;
  // A rank that exchanges point-to-point messages spends part of its
  // "compute" (time outside collectives) waiting for its peers: it is left
  // to the late-sender detector, which tells the waiting from the late.
  auto p2p = [](const RankEvidence& e) {
    for (auto& [peer, p] : e.peers)
      if (p.recvd > 0) return true;
    return false;
  };
  std::vector<const RankEvidence*> el;
  for (auto& e : ranks)
    if (e.attached && e.alive && !e.finalized && e.steps >= opt_.min_steps && !p2p(e)) el.push_back(&e);
  if (el.size() < 3) {  // two peers cannot name a culprit
    confirm_.clear();
    return res;
  }
  std::vector<double> v, jit;
  for (auto* e : el) {
    v.push_back(e->compute_s);
    jit.push_back(e->compute_jitter_s);
  }
  c3::StatResult st;
  double guard = opt_.absolute_s;
  try {
    guard = last_guard_ = absolute_guard(opt_.absolute_s, opt_.jitter_k, jit);
    st = c3::statistical_outliers(v, {guard, opt_.relative, 3.0});
  } catch (const c3::BadSample&) {
    return res;  // a timing we cannot trust: no verdict this round
  }
  res.compared = true;
  res.median_compute_s = st.median;
  if (log::enabled(log::Level::kDebug)) {
    std::string per;
    for (std::size_t i = 0; i < el.size() && i < 16; ++i)
      per += fmt::format(" {}:{:.6f}/{:.6f}", el[i]->rank, v[i], jit[i]);
    log::debug("compute stragglers: {} ranks, median {:.6f} s, guard {:.6f} s (median jitter {:.6f} s), {} above;"
               " compute/jitter:{}", el.size(), st.median, guard, c3::median(jit), st.outliers.size(), per);
  }
  // Above the others by more than its own spread too: a rank descheduled
  // for a moment (its steps vary by as much as it is above) is not slow.
  std::set<int> outliers;
  for (auto i : st.outliers)
    if (v[i] - st.median > opt_.own_k * jit[i]) outliers.insert(el[i]->rank);
  for (std::size_t i = 0; i < el.size(); ++i) {
    const auto& e = *el[i];
    const std::string key = key_for(e.rank);
    if (!outliers.count(e.rank)) {
      confirm_.erase(e.rank);
      if (open.count(key) && ++healthy_[e.rank] >= opt_.confirmations) {
        res.resolved.push_back(key);
        healthy_.erase(e.rank);
      }
      continue;
    }
    healthy_.erase(e.rank);
    // A confirmation needs new steps: more of them, or (its history full,
    // so the count stays) its collectives went on.
    // And apart in time: bursts of a shared host last about a second.
    auto& last = last_seen_[e.rank];
    auto& at = last_confirm_s_.try_emplace(e.rank, -1e18).first->second;
    if ((e.steps > last.first || e.seq > last.second) && (now_s < 0 || now_s - at >= opt_.confirm_gap_s)) {
      last = {e.steps, e.seq};
      at = now_s;
      ++confirm_[e.rank];
    }
    // One slow rank is one incident: not while the change-point rule has it.
    if (confirm_[e.rank] < opt_.confirmations || open.count(key) || open.count(LateSenderTracker::key_for(e.rank)))
      continue;
    // Scores of the slowest ranks (bounded: jobs have thousands of ranks).
    std::vector<std::size_t> order(el.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return st.scores[a] > st.scores[b]; });
    json scores = json::object();
    for (std::size_t k = 0; k < order.size() && k < 16; ++k)
      scores[std::to_string(el[order[k]]->rank)] = st.scores[order[k]];
    VerdictDraft d;
    d.kind = c3::VerdictKind::kStraggler;
    d.status = c3::VerdictStatus::kAttributed;
    d.ranks = {e.rank};
    d.hosts = {e.node};
    d.evidence = {{"rule", "compute time per step above the peer median by the absolute and relative "
                           "thresholds, confirmed"},
                  {"type", "compute"},
                  {"culprits", json::array({{{"rank", e.rank}, {"host", e.node}, {"pid", e.pid},
                                             {"score", st.scores[i]}, {"compute_s", e.compute_s},
                                             {"wait_s", e.wait_s}, {"step_s", e.step_s},
                                             {"steps", e.steps}}})},
                  {"median_compute_s", st.median},
                  {"scale_s", st.scale},
                  {"scale", c3::to_string(st.scale_kind)},
                  {"threshold_absolute_s", guard},
                  {"median_jitter_s", c3::median(jit)},
                  {"threshold_relative", opt_.relative},
                  {"confirmations", confirm_[e.rank]},
                  {"peers", el.size()},
                  {"scores", scores}};
    d.key = key;
    res.verdicts.push_back(std::move(d));
  }
  return res;
}

}  // namespace scout::scoutd

namespace scout::scoutd {

CommTracker::Result CommTracker::update(const std::vector<RankEvidence>& ranks,
                                        const std::set<std::string>& open, double now_s) {
  Result res;
  std::map<std::uint64_t, std::vector<const RankEvidence*>> members;
  for (auto& e : ranks)
    if (e.attached && e.alive && !e.finalized)
      for (auto& [c, w] : e.comm_wait) members[c].push_back(&e);
  // Equivalent communicators: same size and pairwise disjoint (the rows of
  // a grid form one family, its columns another).
  // Membership: as the probe published it (by identity); for a
  // communicator too large to list, the ranks seen using it.
  std::map<std::uint64_t, std::set<int>> mset;
  for (auto& [c, m] : members) {
    for (auto* e : m) {
      auto it = e->comm_members.find(c);
      if (it != e->comm_members.end()) {
        mset[c] = std::set<int>(it->second.begin(), it->second.end());
        break;
      }
    }
    if (mset[c].empty())
      for (auto* e : m) mset[c].insert(e->rank);
  }
  std::vector<std::vector<std::uint64_t>> families;
  for (auto& [c, m] : members) {
    if (mset[c].size() < 2) continue;
    bool placed = false;
    for (auto& f : families) {
      if (mset[f.front()].size() != mset[c].size()) continue;
      bool disjoint = true;
      for (auto other : f)
        for (int r : mset[c])
          if (mset[other].count(r)) disjoint = false;
      if (disjoint) {
        f.push_back(c);
        placed = true;
        break;
      }
    }
    if (!placed) families.push_back({c});
  }
  std::set<std::uint64_t> slow, compared;
  std::map<std::uint64_t, double> duration;
  double guard_max = 0;
  for (auto& comms : families) {
    if (comms.size() < 3) continue;
    std::vector<double> v, jit, own;
    for (auto c : comms) {
      std::vector<double> w, cj;
      for (auto* e : members[c]) {
        w.push_back(e->comm_wait.at(c));
        if (auto it = e->comm_jitter.find(c); it != e->comm_jitter.end()) {
          jit.push_back(it->second);
          if (it->second > 0) cj.push_back(it->second);
        }
      }
      std::sort(w.begin(), w.end());
      duration[c] = w[w.size() / 2];
      v.push_back(duration[c]);
      own.push_back(cj.empty() ? 0.0 : c3::median(std::move(cj)));
      compared.insert(c);
    }
    try {
      // Few communicators per family: the absolute and relative thresholds
      // decide (a robust scale of three values is mostly the outlier itself).
      const double guard = absolute_guard(opt_.absolute_s, opt_.jitter_k, jit);
      guard_max = std::max(guard_max, guard);
      const auto st = c3::statistical_outliers(v, {guard, opt_.relative, 0.0});
      // Above the others by more than its own spread too, as a compute
      // straggler: a communicator whose collectives vary by as much as it
      // is above (its ranks descheduled for a moment on a loaded host) is
      // not slow.
      for (auto i : st.outliers)
        if (v[i] - st.median > opt_.own_k * own[i]) slow.insert(comms[i]);
    } catch (const c3::BadSample&) {
      return res;
    }
  }
  if (!compared.empty()) last_guard_ = guard_max;
  std::vector<std::string> open_comm;
  for (auto& k : open)
    if (k.rfind("straggler:comm", 0) == 0) open_comm.push_back(k);
  if (slow.empty()) {
    confirm_ = 0;
    last_set_.clear();
    if (!open_comm.empty() && ++healthy_ >= opt_.confirmations) {
      res.resolved = open_comm;
      healthy_ = 0;
    }
    return res;
  }
  healthy_ = 0;
  std::string set;
  for (auto c : slow) set += fmt::format("{:016x},", c);
  // Confirmations of one slow set, at least confirm_gap_s apart (a shared
  // host's bursts last about a second); another set starts again.
  if (set != last_set_) {
    confirm_ = 1;
    last_confirm_s_ = now_s;
  } else if (now_s < 0 || now_s - last_confirm_s_ >= opt_.confirm_gap_s) {
    ++confirm_;
    last_confirm_s_ = now_s;
  }
  last_set_ = set;
  if (confirm_ < opt_.confirmations) return res;
  // Intersect the members of every slow communicator.
  std::set<int> inter;
  bool first = true;
  json slow_list = json::array();
  for (auto c : slow) {
    const std::set<int>& m = mset[c];
    json mj = json::array();
    for (int r : m) mj.push_back(r);
    slow_list.push_back({{"communicator", fmt::format("{:016x}", c)}, {"members", mj},
                         {"duration_s", duration[c]}});
    if (first) inter = m;
    else {
      std::set<int> keep;
      for (int r : inter)
        if (m.count(r)) keep.insert(r);
      inter = keep;
    }
    first = false;
  }
  bool contradicted = false;
  if (inter.size() == 1) {
    for (auto c : compared) {
      if (slow.count(c)) continue;
      if (mset[c].count(*inter.begin())) contradicted = true;
    }
  }
  VerdictDraft d;
  d.kind = c3::VerdictKind::kStraggler;
  json ev = {{"type", "communication"}, {"slow_communicators", slow_list},
             {"confirmations", confirm_}, {"threshold_absolute_s", last_guard_},
             {"threshold_relative", opt_.relative}};
  if (inter.size() == 1 && !contradicted) {
    const int x = *inter.begin();
    const RankEvidence* xe = nullptr;
    for (auto& e : ranks)
      if (e.rank == x) xe = &e;
    d.status = c3::VerdictStatus::kAttributed;
    d.ranks = {x};
    d.hosts = {xe ? xe->node : "?"};
    ev["rule"] = "the slow communicators meet at one rank and no healthy communicator contains it";
    ev["culprits"] = json::array({{{"rank", x}, {"host", d.hosts[0]}, {"pid", xe ? xe->pid : 0}}});
    d.key = fmt::format("straggler:comm:{}", x);
  } else {
    d.status = c3::VerdictStatus::kInconclusive;
    ev["rule"] = inter.empty() ? "slow communicators without a common rank"
                 : contradicted ? "the common rank is also in a healthy communicator"
                                : "the slow communicators share several ranks";
    json common = json::array();
    for (int r : inter) common.push_back(r);
    ev["common_ranks"] = common;
    d.key = "straggler:comm-inconclusive:" + set;
  }
  d.evidence = ev;
  if (!open.count(d.key)) res.verdicts.push_back(std::move(d));
  return res;
}

}  // namespace scout::scoutd
