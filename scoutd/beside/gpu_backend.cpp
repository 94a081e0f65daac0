// The CUDA side of replay, plugged into the runner when scoutd is built
// with CUDA: every SM's signature per GPU recipe, named gpuD/smS, compared
// within the GPU model.
#include "scoutd/beside/gpu_backend.hpp"

#include "replay/gpu.hpp"
#include "replay/runner.hpp"

namespace scout::scoutd {

void install_gpu_backend() {
  replay::GpuBackend b;
  b.devices = [] { return replay::gpu::device_count(); };
  b.run = [](int dev, std::uint64_t seed, const std::vector<replay::FaultInjector::GpuFlip>& flips,
             const std::string& only, std::string& error) {
    std::vector<replay::gpu::Flip> fl;
    for (auto& f : flips) {
      if (f.recipe.empty())
        for (int r = 0; r < replay::gpu::kRecipeCount; ++r) fl.push_back({f.sm, replay::gpu::kRecipes[r], f.bit});
      else
        fl.push_back({f.sm, f.recipe, f.bit});
    }
    auto cy = replay::gpu::run_cycle(dev, seed, 1, fl, only);
    error = cy.error;
    std::vector<replay::DeviceResult> out;
    for (auto& run : cy.recipes)
      for (auto& sm : run.sms) {
        replay::DeviceResult r;
        r.device = "gpu" + std::to_string(dev) + "/sm" + std::to_string(sm.sm);
        r.recipe = run.recipe;
        r.signature = sm.signature;
        r.elapsed_ns = static_cast<std::uint64_t>(run.ms * 1e6);
        r.cls = cy.name;
        r.gpu = dev;
        r.sm = sm.sm;
        out.push_back(std::move(r));
      }
    return out;
  };
  replay::set_gpu_backend(std::move(b));
}

}  // namespace scout::scoutd
