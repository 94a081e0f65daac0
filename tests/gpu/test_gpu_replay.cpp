// GPU replay recipes on a real GPU: every recipe ran on every SM (claimed,
// one block each), every SM agrees, the results are deterministic for a
// seed and change with it, the exactly reproducible recipes equal the
// host-computed reference (a constant or broken recipe fails here), and a
// bit flipped on one SM is seen on that SM only. Exit 77 (automake:
// skipped) only when CUDA says there is no device; a driver that cannot be
// used is a failure (GPUs that exist but cannot be checked).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "replay/gpu.hpp"

using namespace scout::replay::gpu;

int main() {
  std::string why;
  const int n = device_count(&why);
  if (n == 0) {
    std::printf("SKIP: no CUDA device (or no NVIDIA driver) on this machine: the GPU replay recipes are built "
                "but were not run\n");
    return 77;
  }
  if (n < 0) {
    std::printf("FAIL: the CUDA driver cannot be used: %s\n", why.c_str());
    return 1;
  }
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) {
      std::printf("FAIL: %s\n", what.c_str());
      ++failures;
    }
  };
  for (int dev = 0; dev < n; ++dev) {
    Cycle a = run_cycle(dev, 42, 1, {}), b = run_cycle(dev, 42, 1, {}), c = run_cycle(dev, 43, 1, {});
    check(a.error.empty() && b.error.empty() && c.error.empty(), "cycles ran: " + a.error + b.error + c.error);
    if (!a.error.empty() || !b.error.empty() || !c.error.empty()) continue;
    check(a.recipes.size() == b.recipes.size() && a.recipes.size() == c.recipes.size(), "every cycle ran the same recipes");
    check(a.recipes.size() + 1 >= static_cast<std::size_t>(kRecipeCount), "every recipe ran (bf16 needs sm_80)");
    if (a.recipes.size() != b.recipes.size() || a.recipes.size() != c.recipes.size()) continue;
    std::printf("device %d: %s, %d SMs\n%-20s %8s %10s %12s %10s\n", dev, a.name.c_str(), a.sm_count, "recipe",
                "SMs", "GPU ms", "signature", "reference");
    for (std::size_t r = 0; r < a.recipes.size(); ++r) {
      const auto& ra = a.recipes[r];
      std::set<std::uint64_t> va, vb, vc;
      for (auto& s : ra.sms) va.insert(s.signature);
      for (auto& s : b.recipes[r].sms) vb.insert(s.signature);
      for (auto& s : c.recipes[r].sms) vc.insert(s.signature);
      const std::uint64_t ref = host_reference(ra.recipe, 42);
      std::printf("%-20s %4d/%-4d %10.3f %012llx %10s\n", ra.recipe.c_str(), ra.covered, a.sm_count, ra.ms,
                  static_cast<unsigned long long>(va.empty() ? 0 : *va.begin()) & 0xFFFFFFFFFFFFull,
                  ref == 0 ? "-" : (va.size() == 1 && *va.begin() == ref ? "equal" : "DIFFERS"));
      check(ra.covered == a.sm_count, ra.recipe + ": every SM ran a block (" + std::to_string(ra.covered) + " of " +
                                          std::to_string(a.sm_count) + ")");
      check(va.size() == 1, ra.recipe + ": every SM computes the same");
      check(va == vb, ra.recipe + ": deterministic for a seed");
      check(va != vc, ra.recipe + ": another seed, another result");
      if (ref != 0) check(va.size() == 1 && *va.begin() == ref, ra.recipe + ": equals the host's reference");
      if (ra.sms.empty()) continue;
      // One SM computing wrong is seen on that SM only.
      const int bad = ra.sms.front().sm;
      Cycle f = run_cycle(dev, 42, 1, {{bad, ra.recipe, 77}}, ra.recipe);
      check(f.error.empty() && f.recipes.size() == 1, ra.recipe + ": flip run");
      if (f.recipes.size() == 1 && !va.empty()) {
        int differ = 0, differ_bad = 0;
        for (auto& s : f.recipes[0].sms)
          if (s.signature != *va.begin()) {
            ++differ;
            differ_bad += s.sm == bad;
          }
        check(differ == 1 && differ_bad == 1, ra.recipe + ": a flip on SM " + std::to_string(bad) +
                                                  " is seen on that SM only (" + std::to_string(differ) + " differ)");
      }
    }
  }
  std::printf(failures ? "%d failure(s)\n" : "all GPU replay checks passed\n", failures);
  return failures ? 1 : 0;
}
