// GPU replay recipes (CUDA). Each recipe over-launches its grid and the
// first block on each SM claims it (one block per SM, SM id read at the
// start and the end), on the lowest-priority stream; every block computes
// the same deterministic work from the same seed; the host signs each
// block's output, so a bad SM can be named, and reports how many SMs ran.
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
  int covered = 0;          // SMs that ran a block (of Cycle::sm_count)
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

// GPUs on this node: 0 only when CUDA says there is none or the node has no
// NVIDIA kernel driver at all; -1 (with *error)
// when the driver cannot be used (too old, no fabric manager, ...): GPUs
// that exist but cannot be checked are not "no GPU".
int device_count(std::string* error = nullptr) noexcept;
// The signature every SM must produce for `recipe` with `seed`, computed on
// the host, for the recipes the host reproduces exactly (gpu_fma_chain,
// gpu_int_bit); 0 for the others.
std::uint64_t host_reference(const std::string& recipe, std::uint64_t seed);
// Runs the recipes (all when `only` is empty) on `device`.
Cycle run_cycle(int device, std::uint64_t seed, int blocks_per_sm, const std::vector<Flip>& flips,
                const std::string& only = "");

}  // namespace scout::replay::gpu
