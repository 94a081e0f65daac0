// Compute straggler detection (see straggler_detector.hpp).
#include "scoutd/straggler_detector.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace scout::scoutd {

using nlohmann::json;

std::string StragglerTracker::key_for(int rank) { return fmt::format("straggler:compute:{}", rank); }

StragglerTracker::Result StragglerTracker::update(const std::vector<RankEvidence>& ranks,
                                                  const std::set<std::string>& open) {
  Result res;
  std::vector<const RankEvidence*> el;
  for (auto& e : ranks)
    if (e.attached && e.alive && !e.finalized && e.steps >= opt_.min_steps) el.push_back(&e);
  if (el.size() < 3) {  // two peers cannot name a culprit
    confirm_.clear();
    return res;
  }
  std::vector<double> v;
  for (auto* e : el) v.push_back(e->compute_s);
  c3::StatResult st;
  try {
    st = c3::statistical_outliers(v, {opt_.absolute_s, opt_.relative, 3.0});
  } catch (const c3::BadSample&) {
    return res;  // a timing we cannot trust: no verdict this round
  }
  res.compared = true;
  res.median_compute_s = st.median;
  std::set<int> outliers;
  for (auto i : st.outliers) outliers.insert(el[i]->rank);
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
    if (e.steps > last_steps_[e.rank]) {  // a confirmation needs new steps
      last_steps_[e.rank] = e.steps;
      ++confirm_[e.rank];
    }
    if (confirm_[e.rank] < opt_.confirmations || open.count(key)) continue;
    // Scores of the slowest ranks (bounded: jobs have thousands of ranks).
    std::vector<std::size_t> order(el.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return st.scores[a] > st.scores[b]; });
    json scores = json::object();
    for (std::size_t k = 0; k < order.size() && k < 16; ++k)
      scores[std::to_string(el[order[k]]->rank)] = st.scores[order[k]];
    VerdictDraft d;
    d.kind = "straggler";
    d.status = "attributed";
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
                  {"threshold_absolute_s", opt_.absolute_s},
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
