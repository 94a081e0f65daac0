// GPU replay recipes on a real GPU: deterministic, every SM agrees, a flip
// on one SM changes that SM only, and the per-recipe GPU time. Exit 77
// (automake: skipped) with a message when there is no GPU or driver.
#include <cstdio>
#include <map>
#include <algorithm>
#include <set>
#include <string>

#include "replay/gpu.hpp"

using namespace scout::replay::gpu;

int main() {
  const int n = device_count();
  if (n == 0) {
    std::printf("SKIP: no CUDA device or driver on this machine: the GPU replay recipes are built "
                "but were not run\n");
    return 77;
  }
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) {
      std::printf("FAIL: %s\n", what.c_str());
      ++failures;
    }
  };
  for (int dev = 0; dev < n; ++dev) {
    Cycle a = run_cycle(dev, 42, 2, {}), b = run_cycle(dev, 42, 2, {}), c = run_cycle(dev, 43, 2, {});
    check(a.error.empty() && b.error.empty() && c.error.empty(), "cycles ran: " + a.error + b.error + c.error);
    if (!a.error.empty()) continue;
    std::printf("device %d: %s, %d SMs\n%-20s %8s %10s %12s\n", dev, a.name.c_str(), a.sm_count, "recipe",
                "SMs", "GPU ms", "signature");
    for (std::size_t r = 0; r < a.recipes.size(); ++r) {
      const auto& ra = a.recipes[r];
      std::set<std::uint64_t> va, vb, vc;
      for (auto& s : ra.sms) va.insert(s.signature);
      for (auto& s : b.recipes[r].sms) vb.insert(s.signature);
      for (auto& s : c.recipes[r].sms) vc.insert(s.signature);
      std::printf("%-20s %8zu %10.3f %012llx\n", ra.recipe.c_str(), ra.sms.size(), ra.ms,
                  static_cast<unsigned long long>(va.empty() ? 0 : *va.begin()) & 0xFFFFFFFFFFFFull);
      check(va.size() == 1, ra.recipe + ": every SM computes the same");
      check(va == vb, ra.recipe + ": deterministic for a seed");
      check(va != vc, ra.recipe + ": another seed, another result");
      check(ra.sms.size() * 2 >= static_cast<std::size_t>(a.sm_count), ra.recipe + ": at least half the SMs covered");
      // One SM computing wrong is seen on that SM only.
      const int bad = ra.sms.front().sm;
      Cycle f = run_cycle(dev, 42, 2, {{bad, ra.recipe, 77}}, ra.recipe);
      check(f.error.empty() && f.recipes.size() == 1, ra.recipe + ": flip run");
      if (f.recipes.size() == 1) {
        int differ = 0, differ_bad = 0;
        for (auto& s : f.recipes[0].sms)
          if (s.signature != *va.begin()) {
            ++differ;
            differ_bad += s.sm == bad;
          }
        check((differ == 1 && differ_bad == 1) ||
                  (differ == 0 && std::none_of(f.recipes[0].sms.begin(), f.recipes[0].sms.end(),
                                               [&](auto& s) { return s.sm == bad; })),
              ra.recipe + ": a flip on SM " + std::to_string(bad) + " is seen on that SM only");
      }
    }
  }
  std::printf(failures ? "%d failure(s)\n" : "all GPU replay checks passed\n", failures);
  return failures ? 1 : 0;
}
