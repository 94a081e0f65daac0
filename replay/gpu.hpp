// GPU replay recipes (CUDA). Each recipe runs as a bounded grid (one block
// per SM by default) on the lowest-priority stream, every block computing the
// same deterministic work from the same seed and recording the SM it ran on
// (%smid); the host signs each block's output, so a bad SM can be named.
// Built when configure finds nvcc (--with-cuda); without a GPU or a driver,
// device_count() is 0 and nothing runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scout::replay::gpu {

// Recipe names, as they appear in verdicts (prefixed "gpu_").
extern const char* const kRecipes[];
extern const int kRecipeCount;

struct SmSig {
  int sm = -1;
  std::uint64_t signature = 0;
  int blocks = 0;           // blocks that ran on this SM
  bool blocks_agree = true; // all of them computed the same
};

struct RecipeRun {
  std::string recipe;
  std::vector<SmSig> sms;   // by SM id
  double ms = 0;            // GPU time of the kernel
};

struct Cycle {
  int device = -1;
  std::string name;         // device model (the comparison class)
  int sm_count = 0;
  std::string error;        // empty when it ran
  std::vector<RecipeRun> recipes;
};

// A bit flip for tests: applied to the host copy of the output of every
// block that ran on `sm` for `recipe` (sm < 0: none).
struct Flip {
  int sm = -1;
  std::string recipe;
  int bit = 0;
};

int device_count() noexcept;
// Runs the recipes (all when `only` is empty) on `device`.
Cycle run_cycle(int device, std::uint64_t seed, int blocks_per_sm, const std::vector<Flip>& flips,
                const std::string& only = "");

}  // namespace scout::replay::gpu
