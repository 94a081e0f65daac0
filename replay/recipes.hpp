// Replay recipes: small deterministic kernels with seeded inputs that are
// identical on every node. Each run yields a libc3 signature of its result
// and its elapsed time. Equivalent devices running the same recipe with the
// same seed must give the same signature; one that does not computes wrong.
//
// Determinism: this file is compiled for the baseline ISA with
// -ffp-contract=off and no fast-math; the transcendental functions are our
// own (libm picks its code path at run time), and the signature is the
// generic libc3 path. Nothing here dispatches on the CPU it runs on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace scout::replay {

enum class Recipe {
  kGemmF64,       // dense matmul, fp64, fixed summation order
  kGemmF32,       // dense matmul, fp32, fixed summation order
  kFmaChain,      // long fused multiply-add chains (std::fma: correctly rounded)
  kTranscendental,// exp, log, sin, sqrt
  kIntBit,        // CRC-32C, popcount, shifts and rotations
  kMemMarch,      // March C- over a buffer
};
inline constexpr Recipe kAllRecipes[] = {Recipe::kGemmF64, Recipe::kGemmF32, Recipe::kFmaChain,
                                         Recipe::kTranscendental, Recipe::kIntBit, Recipe::kMemMarch};

const char* recipe_name(Recipe r) noexcept;
std::optional<Recipe> recipe_from_name(const std::string& name) noexcept;

struct RecipeResult {
  std::uint64_t signature = 0;
  std::uint64_t elapsed_ns = 0;   // wall time of the kernel
  std::uint64_t cpu_ns = 0;       // thread CPU time of the kernel
  std::uint64_t errors = 0;       // memory march: mismatching reads
};

// Runs one recipe with `seed`; `scale` >= 1 multiplies the work. A bit
// flip, when asked for, is applied to the result buffer before it is signed
// (the test fault injection: everything else is the real code path).
RecipeResult run_recipe(Recipe r, std::uint64_t seed, int scale = 1, int flip_bit = -1);

// Our own transcendental functions (exposed for tests).
double det_exp(double x) noexcept;
double det_log(double x) noexcept;
double det_sin(double x) noexcept;

// What makes CPUs equivalent peers: model name and feature flags of the
// given CPU, from /proc/cpuinfo ("unknown" when absent).
struct CpuClass {
  std::string model;
  std::uint64_t flags_hash = 0;
  std::string key() const;  // model + flags hash
};
CpuClass cpu_class(int cpu);

// CPUs this thread may run on (its affinity mask).
std::vector<int> allowed_cpus();

// Test fault injection: SCOUT_REPLAY_FAULT, entries separated by ';', each
//   node=NAME[+NAME...],core=N|*,recipe=NAME|*,bit=B[,mode=recurring|once][,after=CYCLE]
// or, for a GPU SM: node=NAME,gpu=D,sm=S,recipe=gpu_NAME|*,bit=B[,...]
struct FaultSpec {
  std::vector<std::string> nodes;
  int core = -1;                   // -1: every core
  std::optional<Recipe> recipe;    // empty: every recipe
  int gpu = -1, sm = -1;           // a GPU fault when gpu >= 0
  std::string gpu_recipe;          // empty: every GPU recipe
  int bit = 0;
  bool once = false;
  long after_cycle = 0;            // applies from this cycle on
};
// Parses the setting; throws std::invalid_argument naming what was expected.
std::vector<FaultSpec> parse_fault_specs(const std::string& text);

class FaultInjector {
 public:
  FaultInjector() = default;
  explicit FaultInjector(std::vector<FaultSpec> specs) : specs_(std::move(specs)), used_(specs_.size()) {}
  // Bit to flip for this run, or -1.
  int bit_for(const std::string& node, int core, Recipe r, long cycle);
  struct GpuFlip {
    int sm;
    std::string recipe;  // empty: every recipe
    int bit;
  };
  // Flips for one GPU cycle of this node (once-faults are used up).
  std::vector<GpuFlip> gpu_flips(const std::string& node, int gpu, long cycle);
  bool empty() const { return specs_.empty(); }

 private:
  std::vector<FaultSpec> specs_;
  std::vector<bool> used_;
};

}  // namespace scout::replay
