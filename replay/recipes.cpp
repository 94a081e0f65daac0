// Replay recipes (see recipes.hpp). Compiled with -ffp-contract=off for the
// baseline ISA: the same binary computes the same bits on equivalent CPUs.
#include "replay/recipes.hpp"

#include <sched.h>
#include <time.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "libc3/signature.hpp"

namespace scout::replay {
namespace {

std::uint64_t now_ns(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

// splitmix64: the seeded input generator shared by every node.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0,1)
};

template <class T>
void flip(std::vector<T>& v, int bit) {
  if (bit < 0 || v.empty()) return;
  auto* bytes = reinterpret_cast<unsigned char*>(v.data());
  std::size_t nbits = v.size() * sizeof(T) * 8;
  std::size_t b = static_cast<std::size_t>(bit) % nbits;
  bytes[b / 8] ^= static_cast<unsigned char>(1u << (b % 8));
}

template <class T>
std::uint64_t sign(const std::vector<T>& v, std::uint32_t elem, std::int64_t rows, std::int64_t cols) {
  const std::int64_t shape[2] = {rows, cols};
  c3::SignatureMeta meta{elem, std::span<const std::int64_t>(shape, 2)};
  return c3::detail::signature_generic(v.data(), v.size() * sizeof(T), meta);
}

template <class T>
std::uint64_t gemm(std::uint64_t seed, int scale, int flip_bit, int n0, std::uint32_t elem) {
  const int n = n0 * scale;
  Rng rng{seed};
  std::vector<T> a(static_cast<std::size_t>(n) * n), b(a.size()), c(a.size(), T(0));
  for (auto& x : a) x = static_cast<T>(rng.uniform() * 2 - 1);
  for (auto& x : b) x = static_cast<T>(rng.uniform() * 2 - 1);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      T acc = 0;  // fixed order: k ascending
      for (int k = 0; k < n; ++k) acc += a[static_cast<std::size_t>(i) * n + k] * b[static_cast<std::size_t>(k) * n + j];
      c[static_cast<std::size_t>(i) * n + j] = acc;
    }
  flip(c, flip_bit);
  return sign(c, elem, n, n);
}

std::uint64_t fma_chain(std::uint64_t seed, int scale, int flip_bit) {
  Rng rng{seed};
  const int lanes = 2048, iters = 256 * scale;
  std::vector<double> x(lanes), a(lanes), b(lanes);
  for (int i = 0; i < lanes; ++i) {
    x[i] = rng.uniform();
    a[i] = 0.5 + 0.49 * rng.uniform();  // |a| < 1: the chain stays bounded
    b[i] = rng.uniform() - 0.5;
  }
  for (int t = 0; t < iters; ++t)
    for (int i = 0; i < lanes; ++i) x[i] = std::fma(x[i], a[i], b[i]);
  flip(x, flip_bit);
  return sign(x, c3::kElemF64, lanes, 1);
}

std::uint64_t transcendental(std::uint64_t seed, int scale, int flip_bit) {
  Rng rng{seed};
  const int n = 8192 * scale;
  std::vector<double> y(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    double x = rng.uniform() * 40 - 20;
    y[static_cast<std::size_t>(i)] = det_exp(x * 0.5) + det_log(std::fabs(x) + 1e-3) + det_sin(x * 7) +
                                     std::sqrt(std::fabs(x));
  }
  flip(y, flip_bit);
  return sign(y, c3::kElemF64, n, 1);
}

std::uint64_t int_bit(std::uint64_t seed, int scale, int flip_bit) {
  Rng rng{seed};
  const std::size_t words = 16384 * static_cast<std::size_t>(scale);
  std::vector<std::uint64_t> buf(words);
  for (auto& w : buf) w = rng.next();
  std::vector<std::uint64_t> out(4, 0);
  std::uint32_t crc = 0xFFFFFFFFu;  // CRC-32C, bitwise (no tables, no ISA)
  std::uint64_t pop = 0, mix = 0;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint64_t w = buf[i];
    for (int byte = 0; byte < 8; ++byte) {
      crc ^= static_cast<std::uint32_t>((w >> (8 * byte)) & 0xFF);
      for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    pop += static_cast<std::uint64_t>(__builtin_popcountll(w));
    const unsigned r = static_cast<unsigned>(i % 63) + 1;
    mix ^= (w << r) | (w >> (64 - r));
    mix = (mix >> 7) ^ (mix << 3) ^ (w >> (i % 17));
  }
  out[0] = crc ^ 0xFFFFFFFFu;
  out[1] = pop;
  out[2] = mix;
  out[3] = words;
  flip(out, flip_bit);
  return sign(out, c3::kElemU64, 4, 1);
}

std::uint64_t mem_march(std::uint64_t seed, int scale, int flip_bit, std::uint64_t& errors) {
  Rng rng{seed};
  const std::size_t words = 131072 * static_cast<std::size_t>(scale);  // 1 MiB per scale
  std::vector<std::uint64_t> buf(words);
  volatile std::uint64_t* m = buf.data();  // every read and write really happens
  const std::uint64_t p0 = rng.next(), p1 = ~p0;
  errors = 0;
  for (std::size_t i = 0; i < words; ++i) m[i] = p0;                                  // up(w0)
  for (std::size_t i = 0; i < words; ++i) { errors += m[i] != p0; m[i] = p1; }        // up(r0,w1)
  for (std::size_t i = 0; i < words; ++i) { errors += m[i] != p1; m[i] = p0; }        // up(r1,w0)
  for (std::size_t i = words; i-- > 0;) { errors += m[i] != p0; m[i] = p1; }          // down(r0,w1)
  for (std::size_t i = words; i-- > 0;) { errors += m[i] != p1; m[i] = p0 ^ i; }      // down(r1,w0')
  std::uint64_t acc = 0;
  for (std::size_t i = 0; i < words; ++i) { errors += m[i] != (p0 ^ i); acc ^= m[i] * (2 * i + 1); }  // up(r0)
  std::vector<std::uint64_t> out = {acc, errors, words};
  flip(out, flip_bit);
  return sign(out, c3::kElemU64, 3, 1);
}

}  // namespace

const char* recipe_name(Recipe r) noexcept {
  switch (r) {
    case Recipe::kGemmF64: return "gemm_f64";
    case Recipe::kGemmF32: return "gemm_f32";
    case Recipe::kFmaChain: return "fma_chain";
    case Recipe::kTranscendental: return "transcendental";
    case Recipe::kIntBit: return "int_bit";
    case Recipe::kMemMarch: return "mem_march";
  }
  return "?";
}

std::optional<Recipe> recipe_from_name(const std::string& name) noexcept {
  for (Recipe r : kAllRecipes)
    if (name == recipe_name(r)) return r;
  return std::nullopt;
}

RecipeResult run_recipe(Recipe r, std::uint64_t seed, int scale, int flip_bit) {
  if (scale < 1) scale = 1;
  RecipeResult out;
  const std::uint64_t w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  switch (r) {
    case Recipe::kGemmF64: out.signature = gemm<double>(seed, scale, flip_bit, 80, c3::kElemF64); break;
    case Recipe::kGemmF32: out.signature = gemm<float>(seed, scale, flip_bit, 96, c3::kElemF32); break;
    case Recipe::kFmaChain: out.signature = fma_chain(seed, scale, flip_bit); break;
    case Recipe::kTranscendental: out.signature = transcendental(seed, scale, flip_bit); break;
    case Recipe::kIntBit: out.signature = int_bit(seed, scale, flip_bit); break;
    case Recipe::kMemMarch: out.signature = mem_march(seed, scale, flip_bit, out.errors); break;
  }
  out.elapsed_ns = now_ns(CLOCK_MONOTONIC) - w0;
  out.cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
  return out;
}

// exp: x = k ln2 + r, |r| <= ln2/2, Taylor to degree 13, exact scaling.
double det_exp(double x) noexcept {
  if (std::isnan(x)) return x;
  if (x > 709.0) return HUGE_VAL;
  if (x < -745.0) return 0.0;
  const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  const double k = std::nearbyint(x * 1.44269504088896338700);
  const double r = (x - k * ln2_hi) - k * ln2_lo;
  double p = 1.0 / 6227020800.0;  // 1/13!
  const double inv[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                        1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0,
                        1.0 / 6.0, 0.5, 1.0, 1.0};
  for (double c : inv) p = p * r + c;
  return std::ldexp(p, static_cast<int>(k));
}

// log: m in [sqrt(1/2), sqrt(2)), s = (m-1)/(m+1), log m = 2 atanh s.
double det_log(double x) noexcept {
  if (std::isnan(x) || x < 0) return NAN;
  if (x == 0) return -HUGE_VAL;
  if (std::isinf(x)) return x;
  int e = 0;
  double m = std::frexp(x, &e);  // [0.5, 1)
  if (m < 0.70710678118654752440) { m *= 2; --e; }
  const double s = (m - 1) / (m + 1), s2 = s * s;
  double p = 0;
  for (int k = 21; k >= 1; k -= 2) p = p * s2 + 1.0 / k;
  return 2 * s * p + e * 6.93147180559945309417e-01;
}

// sin: reduce to [-pi, pi] by a two-part 2*pi, Taylor to degree 25.
double det_sin(double x) noexcept {
  if (!std::isfinite(x)) return NAN;
  const double twopi_hi = 6.28318530717958623200, twopi_lo = 2.44929359829470635445e-16;
  const double k = std::nearbyint(x * 0.15915494309189533577);
  const double r = (x - k * twopi_hi) - k * twopi_lo, r2 = r * r;
  double p = 0, fact = 1;
  // terms r^(2j+1) / (2j+1)! with alternating signs, summed from the smallest
  double coef[13];
  for (int j = 0; j < 13; ++j) {
    if (j > 0) fact *= (2.0 * j) * (2.0 * j + 1);
    coef[j] = ((j % 2) ? -1.0 : 1.0) / fact;
  }
  for (int j = 12; j >= 0; --j) p = p * r2 + coef[j];
  return p * r;
}

std::string CpuClass::key() const { return fmt::format("{} flags:{:016x}", model, flags_hash); }

CpuClass cpu_class(int cpu) {
  CpuClass c{"unknown", 0};
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  int current = -1;
  auto value = [](const std::string& l) {
    auto p = l.find(':');
    if (p == std::string::npos) return std::string();
    auto v = l.substr(p + 1);
    auto b = v.find_first_not_of(" \t");
    return b == std::string::npos ? std::string() : v.substr(b);
  };
  while (std::getline(in, line)) {
    if (line.rfind("processor", 0) == 0) current = std::atoi(value(line).c_str());
    if (current != cpu) continue;
    if (line.rfind("model name", 0) == 0) c.model = value(line);
    if (line.rfind("flags", 0) == 0) {
      std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
      for (unsigned char ch : value(line)) h = (h ^ ch) * 0x100000001b3ULL;
      c.flags_hash = h;
    }
  }
  return c;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {0};
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) out.push_back(i);
  return out;
}

std::vector<FaultSpec> parse_fault_specs(const std::string& text) {
  std::vector<FaultSpec> out;
  auto bad = [&](const std::string& why) {
    return std::invalid_argument(fmt::format(
        "SCOUT_REPLAY_FAULT '{}': {}; expected node=NAME[+NAME...],core=N|*,recipe=NAME|*,bit=B"
        "[,mode=recurring|once][,after=CYCLE] entries separated by ';'", text, why));
  };
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto end = text.find(';', pos);
    std::string entry = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? text.size() + 1 : end + 1;
    if (entry.empty()) continue;
    FaultSpec f;
    bool have_node = false, have_bit = false;
    std::size_t p = 0;
    while (p <= entry.size()) {
      auto e = entry.find(',', p);
      std::string kv = entry.substr(p, e == std::string::npos ? std::string::npos : e - p);
      p = e == std::string::npos ? entry.size() + 1 : e + 1;
      auto eq = kv.find('=');
      if (eq == std::string::npos) throw bad("'" + kv + "' is not key=value");
      std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
      auto number = [&](long lo, long hi) {
        char* endp = nullptr;
        long n = std::strtol(v.c_str(), &endp, 10);
        if (v.empty() || *endp || n < lo || n > hi)
          throw bad(fmt::format("{}={} is not a number in [{}, {}]", k, v, lo, hi));
        return n;
      };
      if (k == "node") {
        std::size_t q = 0;
        while (q <= v.size()) {
          auto plus = v.find('+', q);
          std::string n = v.substr(q, plus == std::string::npos ? std::string::npos : plus - q);
          if (n.empty()) throw bad("empty node name");
          f.nodes.push_back(n);
          q = plus == std::string::npos ? v.size() + 1 : plus + 1;
        }
        have_node = true;
      } else if (k == "core") {
        f.core = v == "*" ? -1 : static_cast<int>(number(0, 1 << 20));
      } else if (k == "recipe") {
        if (v.rfind("gpu_", 0) == 0) {
          f.gpu_recipe = v;
        } else if (v != "*") {
          f.recipe = recipe_from_name(v);
          if (!f.recipe) throw bad("unknown recipe '" + v + "'");
        }
      } else if (k == "gpu") {
        f.gpu = static_cast<int>(number(0, 1023));
      } else if (k == "sm") {
        f.sm = static_cast<int>(number(0, 1 << 20));
      } else if (k == "bit") {
        f.bit = static_cast<int>(number(0, 1 << 30));
        have_bit = true;
      } else if (k == "mode") {
        if (v != "recurring" && v != "once") throw bad("mode=" + v + " is not recurring or once");
        f.once = v == "once";
      } else if (k == "after") {
        f.after_cycle = number(0, 1L << 40);
      } else {
        throw bad("unknown key '" + k + "'");
      }
    }
    if (!have_node) throw bad("node= missing");
    if (!have_bit) throw bad("bit= missing");
    if ((f.gpu >= 0) != (f.sm >= 0)) throw bad("gpu= and sm= go together");
    if (f.gpu < 0 && !f.gpu_recipe.empty()) throw bad("recipe=" + f.gpu_recipe + " needs gpu= and sm=");
    out.push_back(std::move(f));
  }
  return out;
}

int FaultInjector::bit_for(const std::string& node, int core, Recipe r, long cycle) {
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    const auto& f = specs_[i];
    bool node_ok = false;
    for (auto& n : f.nodes) node_ok = node_ok || n == node;
    if (!node_ok || f.gpu >= 0 || (f.core >= 0 && f.core != core) || (f.recipe && *f.recipe != r) ||
        cycle < f.after_cycle)
      continue;
    if (f.once) {
      if (used_[i]) continue;
      used_[i] = true;
    }
    return f.bit;
  }
  return -1;
}

std::vector<FaultInjector::GpuFlip> FaultInjector::gpu_flips(const std::string& node, int gpu, long cycle) {
  std::vector<GpuFlip> out;
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    const auto& f = specs_[i];
    bool node_ok = false;
    for (auto& n : f.nodes) node_ok = node_ok || n == node;
    if (!node_ok || f.gpu != gpu || cycle < f.after_cycle) continue;
    if (f.once) {
      if (used_[i]) continue;
      used_[i] = true;
    }
    out.push_back({f.sm, f.gpu_recipe, f.bit});
  }
  return out;
}

}  // namespace scout::replay
