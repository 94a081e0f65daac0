// Straggler detection delay and false positives, with scoutd's detector
// (StragglerTracker: median over the last 8 steps, +5 ms and 1.2x, 3
// confirmations) fed per-step compute times of 64 synthetic ranks with +-20%
// jitter; a gather every 20 steps (0.5 s rounds at 25 ms steps). Baseline in
// the same run: a naive rule (any step 1.2x and +5 ms over the median of that
// step, no confirmation).
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "scoutd/detect/straggler_detector.hpp"

using namespace scout::scoutd;

namespace {
constexpr int kRanks = 64, kWindow = 8, kGatherEvery = 20;
constexpr double kBase = 0.020, kWait = 0.005;

struct Sim {
  std::mt19937 rng;
  std::uniform_real_distribution<double> jit{0.8, 1.2};
  std::vector<std::vector<double>> hist = std::vector<std::vector<double>>(kRanks);
  explicit Sim(unsigned seed) : rng(seed) {}
  std::vector<double> step(double slow_factor, int slow_rank) {
    std::vector<double> c(kRanks);
    for (int r = 0; r < kRanks; ++r) {
      c[r] = kBase * jit(rng) * (r == slow_rank ? slow_factor : 1.0);
      hist[r].push_back(c[r]);
      if (hist[r].size() > kWindow) hist[r].erase(hist[r].begin());
    }
    return c;
  }
  std::vector<RankEvidence> evidence(int steps) {
    std::vector<RankEvidence> v(kRanks);
    for (int r = 0; r < kRanks; ++r) {
      auto h = hist[r];
      std::sort(h.begin(), h.end());
      v[r].rank = r;
      v[r].node = "n" + std::to_string(r / 8 + 1);
      v[r].attached = true;
      v[r].steps = steps;
      v[r].compute_s = h[h.size() / 2];
    }
    return v;
  }
};

bool naive(const std::vector<double>& c) {
  auto s = c;
  std::nth_element(s.begin(), s.begin() + kRanks / 2, s.end());
  double med = s[kRanks / 2];
  for (double x : c)
    if (x > med * 1.2 && x > med + 0.005) return true;
  return false;
}
}  // namespace

int main() {
  std::printf("%-34s %14s %14s\n", "", "scout", "naive baseline");
  // Detection delay of a 1.3x straggler (onset at step 200), over 20 seeds.
  std::vector<int> delays;
  int naive_delay_total = 0;
  for (unsigned seed = 1; seed <= 20; ++seed) {
    Sim sim(seed);
    StragglerTracker t;
    int delay = -1, naive_delay = -1;
    for (int s = 1; s <= 2000 && delay < 0; ++s) {
      bool slow = s >= 200;
      auto c = sim.step(slow ? 1.3 : 1.0, 17);
      if (slow && naive_delay < 0 && naive(c)) naive_delay = s - 200;
      if (s % kGatherEvery == 0) {
        auto r = t.update(sim.evidence(s), {});
        for (auto& d : r.verdicts)
          if (d.ranks == std::vector<int>{17} && slow) delay = s - 200;
      }
    }
    delays.push_back(delay);
    naive_delay_total += naive_delay;
  }
  std::sort(delays.begin(), delays.end());
  double step_s = kBase * 1.3 + kWait;
  std::printf("%-34s %8d steps %8.1f steps\n", "1.3x straggler, 64 ranks: delay", delays[delays.size() / 2],
              naive_delay_total / 20.0);
  std::printf("%-34s %12.2f s %14s\n", "  (median over 20 seeds, seconds)", delays[delays.size() / 2] * step_s, "");
  // False positives over 10,000 healthy jittered steps.
  Sim sim(12345);
  StragglerTracker t;
  int fp = 0, naive_fp = 0;
  for (int s = 1; s <= 10000; ++s) {
    auto c = sim.step(1.0, -1);
    if (naive(c)) ++naive_fp;
    if (s % kGatherEvery == 0) fp += static_cast<int>(t.update(sim.evidence(s), {}).verdicts.size());
  }
  std::printf("%-34s %14d %14d\n", "false positives, 10,000 steps", fp, naive_fp);
  return 0;
}
