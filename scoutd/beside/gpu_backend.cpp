// The CUDA side of replay, plugged into the runner when scoutd is built
// with CUDA: every SM's signature per GPU recipe, named gpuD/smS, compared
// within the GPU model (its name and the driver and toolkit versions). The
// device count and each cycle run in a child process with a deadline: a
// hung kernel, a sticky error or a crash costs the child, and the cycle
// reports a GPU error (never clean).
#include "scoutd/beside/gpu_backend.hpp"

#include <cuda_runtime.h>

#include <cctype>

#include <nlohmann/json.hpp>

#include "replay/child_run.hpp"
#include "replay/gpu.hpp"
#include "replay/runner.hpp"

namespace scout::scoutd {

using nlohmann::json;

namespace {
std::string versions() {
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  return " (driver " + std::to_string(drv) + ", runtime " + std::to_string(rt) + ")";
}
}  // namespace

void install_gpu_backend(double deadline_s) {
  replay::GpuBackend b;
  b.devices = [deadline_s](std::string& error) {
    auto out = replay::run_in_child(
        [] {
          std::string e;
          const int n = replay::gpu::device_count(&e);
          return json{{"n", n}, {"error", e}}.dump();
        },
        deadline_s, error);
    if (!out) return -1;
    const json j = json::parse(*out, nullptr, false);
    if (!j.is_object()) {
      error = "malformed answer from the device count";
      return -1;
    }
    error = j.value("error", "");
    return j.value("n", -1);
  };
  b.run = [deadline_s](int dev, std::uint64_t seed, const std::vector<replay::FaultInjector::GpuFlip>& flips,
                       const std::string& only, std::string& error) {
    std::vector<replay::gpu::Flip> fl;
    for (auto& f : flips) {
      if (f.recipe.empty())
        for (int r = 0; r < replay::gpu::kRecipeCount; ++r) fl.push_back({f.sm, replay::gpu::kRecipes[r], f.bit});
      else
        fl.push_back({f.sm, f.recipe, f.bit});
    }
    std::vector<replay::DeviceResult> out;
    auto got = replay::run_in_child(
        [&] {
          auto cy = replay::gpu::run_cycle(dev, seed, 1, fl, only);
          char bus[32] = "";
          if (cudaDeviceGetPCIBusId(bus, sizeof bus, dev) != cudaSuccess) bus[0] = 0;
          json j = {{"error", cy.error}, {"name", cy.name + versions()}, {"sm_count", cy.sm_count}, {"bus", bus}};
          json runs = json::array();
          for (auto& run : cy.recipes) {
            json sms = json::array();
            for (auto& sm : run.sms) sms.push_back({sm.sm, sm.signature});
            runs.push_back({{"recipe", run.recipe}, {"ms", run.ms}, {"covered", run.covered}, {"sms", sms}});
          }
          j["recipes"] = runs;
          return j.dump();
        },
        deadline_s, error);
    if (!got) {
      error = "gpu" + std::to_string(dev) + ": " + error;
      return out;
    }
    const json j = json::parse(*got, nullptr, false);
    if (!j.is_object()) {
      error = "gpu" + std::to_string(dev) + ": malformed answer from the replay child";
      return out;
    }
    if (!j.value("error", "").empty()) error = "gpu" + std::to_string(dev) + ": " + j.value("error", "");
    const int sm_count = j.value("sm_count", 0);
    // Named by CUDA ordinal (what a re-run asks for) and PCI bus id (what an
    // operator finds: ordinals change with CUDA_VISIBLE_DEVICES).
    std::string bus = j.value("bus", "");
    for (char& ch : bus)
      if (!std::isxdigit(static_cast<unsigned char>(ch)) && ch != ':' && ch != '.') ch = '_';
    const std::string name = "gpu" + std::to_string(dev) + (bus.empty() ? "" : "@" + bus);
    for (auto& run : j.value("recipes", json::array())) {
      const int covered = run.value("covered", 0);
      if (covered < sm_count && error.empty())
        error = "gpu" + std::to_string(dev) + ": " + run.value("recipe", "") + " ran on " + std::to_string(covered) +
                " of " + std::to_string(sm_count) + " SMs";
      for (auto& sm : run.value("sms", json::array())) {
        replay::DeviceResult r;
        r.device = name + "/sm" + std::to_string(sm[0].get<int>());
        r.recipe = run.value("recipe", "");
        r.signature = sm[1].get<std::uint64_t>();
        r.elapsed_ns = static_cast<std::uint64_t>(run.value("ms", 0.0) * 1e6);
        r.cls = j.value("name", "");
        r.gpu = dev;
        r.sm = sm[0].get<int>();
        out.push_back(std::move(r));
      }
    }
    return out;
  };
  replay::set_gpu_backend(std::move(b));
}

}  // namespace scout::scoutd
