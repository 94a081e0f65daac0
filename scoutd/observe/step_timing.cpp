// Step detection and per-step timing (see step_timing.hpp).
#include "scoutd/observe/step_timing.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace scout::scoutd {

namespace {
double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}
}  // namespace

double mad_spread(const std::vector<double>& v) {
  if (v.size() < 3) return 0;
  const double m = median_of(v);
  std::vector<double> dev;
  for (double x : v) dev.push_back(std::fabs(x - m));
  return 1.4826 * median_of(dev);
}

std::map<std::uint64_t, double> comm_durations(const std::vector<c3::CollEvent>& events,
                                               std::size_t per_comm, std::map<std::uint64_t, double>* jitter) {
  std::map<std::uint64_t, std::vector<double>> d;
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->exit_ns == 0 || it->exit_ns < it->entry_ns || it->comm == 0) continue;
    auto& v = d[it->comm];
    if (v.size() < per_comm) v.push_back(static_cast<double>(it->exit_ns - it->entry_ns) * 1e-9);
  }
  std::map<std::uint64_t, double> out;
  for (auto& [c, v] : d)
    if (v.size() >= 3) {
      out[c] = median_of(v);
      if (jitter) (*jitter)[c] = mad_spread(v);
    }
  return out;
}

std::uint32_t coll_kind_from_name(const std::string& name) {
  for (std::uint32_t k = 1; k < c3::kCollKindCount; ++k)
    if (name == c3::coll_name(k)) return k;
  return 0;
}

StepStats analyse_steps(const std::vector<c3::CollEvent>& events, std::uint32_t step_kind,
                        int window) {
  StepStats st;
  std::map<std::uint64_t, int> freq;
  for (auto& e : events)
    if (e.exit_ns != 0 && (step_kind == 0 || (e.kind & 0xff) == step_kind)) ++freq[e.fingerprint];
  if (freq.empty()) return st;
  // Most frequent; ties go to the smallest fingerprint so every rank agrees.
  auto best = freq.begin();
  for (auto it = freq.begin(); it != freq.end(); ++it)
    if (it->second > best->second) best = it;
  st.step_fingerprint = best->first;
  std::vector<std::size_t> bounds;
  for (std::size_t i = 0; i < events.size(); ++i)
    if (events[i].fingerprint == st.step_fingerprint && events[i].exit_ns != 0) bounds.push_back(i);
  std::vector<double> step, comp, wait;
  for (std::size_t j = 1; j < bounds.size(); ++j) {
    const auto& a = events[bounds[j - 1]];
    const auto& b = events[bounds[j]];
    if (b.seq - a.seq != bounds[j] - bounds[j - 1]) continue;  // a gap: not every collective seen
    double w = 0;
    bool complete = true;
    for (std::size_t i = bounds[j - 1] + 1; i <= bounds[j]; ++i) {
      if (events[i].exit_ns == 0 || events[i].exit_ns < events[i].entry_ns) { complete = false; break; }
      w += static_cast<double>(events[i].exit_ns - events[i].entry_ns) * 1e-9;
    }
    if (!complete || b.exit_ns <= a.exit_ns) continue;
    double s = static_cast<double>(b.exit_ns - a.exit_ns) * 1e-9;
    step.push_back(s);
    wait.push_back(w);
    comp.push_back(std::max(0.0, s - w));
    st.last_step_seq = b.seq;
  }
  st.steps = static_cast<int>(step.size());
  auto tail = [&](std::vector<double>& v) {
    if (static_cast<int>(v.size()) > window) v.erase(v.begin(), v.end() - window);
    return median_of(v);
  };
  st.step_s = tail(step);
  st.compute_s = tail(comp);
  st.compute_jitter_s = mad_spread(comp);
  st.wait_s = tail(wait);
  return st;
}

}  // namespace scout::scoutd
