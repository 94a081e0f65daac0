// libc3 signatures. Four independent lanes keep the multiplier pipelines busy
// so throughput is close to memory bandwidth; see signature.hpp for the
// guarantees and bench/signature_bench.cpp for the measurement.
#include "libc3/signature.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace scout::c3 {
namespace {

constexpr std::uint64_t kKeyStep = 0x9E3779B97F4A7C15ULL;  // golden ratio
constexpr std::uint64_t kMul = 0xD6E8FEB86659FD93ULL;      // odd
constexpr std::uint64_t kMulFinal1 = 0xFF51AFD7ED558CCDULL;
constexpr std::uint64_t kMulFinal2 = 0xC4CEB9FE1A85EC53ULL;

// Bijective on 64-bit words: xor with a key, xor-shift, multiply by an odd
// constant, xor-shift. Each step is invertible, so different inputs give
// different outputs. The first xor-shift brings the top bits down before the
// multiply; without it a sign-bit change only ever reaches the top bit and
// swapping x and -x cancels out in the lane sum.
inline std::uint64_t word_mix(std::uint64_t w, std::uint64_t key) noexcept {
  std::uint64_t v = w ^ key;
  v ^= v >> 31;
  v *= kMul;
  return v ^ (v >> 29);
}

// Bijective finaliser (murmur3 fmix64).
inline std::uint64_t fmix(std::uint64_t v) noexcept {
  v ^= v >> 33;
  v *= kMulFinal1;
  v ^= v >> 33;
  v *= kMulFinal2;
  v ^= v >> 33;
  return v;
}

inline std::uint64_t rotl(std::uint64_t v, int r) noexcept {
  return (v << r) | (v >> (64 - r));
}

inline std::uint64_t load_word(const unsigned char* p) noexcept {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

}  // namespace

// The body is compiled twice: for the x86-64 baseline and with AVX-512
// (where the four-lane loop vectorises with 64-bit multiplies, about 5x
// faster). Integer arithmetic is exact, so both give the same bits; the
// unit tests compare them.
__attribute__((always_inline)) inline std::uint64_t signature_body(
    const void* data, std::size_t len, const SignatureMeta& meta) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t lane[4] = {0x243F6A8885A308D3ULL, 0x13198A2E03707344ULL,
                           0xA4093822299F31D0ULL, 0x082EFA98EC4E6C89ULL};
  std::uint64_t key = kKeyStep;
  std::size_t i = 0;
  const std::size_t words = len / 8;
  // Main loop: 4 words (32 bytes) per iteration, one per lane.
  for (; i + 4 <= words; i += 4) {
    const unsigned char* q = p + i * 8;
    lane[0] += word_mix(load_word(q), key);
    lane[1] += word_mix(load_word(q + 8), key + kKeyStep);
    lane[2] += word_mix(load_word(q + 16), key + 2 * kKeyStep);
    lane[3] += word_mix(load_word(q + 24), key + 3 * kKeyStep);
    key += 4 * kKeyStep;
  }
  for (; i < words; ++i) {
    lane[i & 3] += word_mix(load_word(p + i * 8), key);
    key += kKeyStep;
  }
  if (const std::size_t tail = len & 7; tail != 0) {
    std::uint64_t w = 0;
    std::memcpy(&w, p + words * 8, tail);  // zero-padded; len is in the meta
    lane[i & 3] += word_mix(w, key);
  }
  // Metadata: length, element type, shape. Hashed separately and xored in,
  // so it cannot cancel a data change (data lanes go through bijections).
  std::uint64_t m = fmix(static_cast<std::uint64_t>(len) ^ 0x5C0075C0075C0075ULL);
  m = fmix(m ^ (static_cast<std::uint64_t>(meta.element_type) << 1 | 1));
  for (std::int64_t d : meta.shape) m = fmix(m ^ static_cast<std::uint64_t>(d) ^ kMul);
  m = fmix(m ^ meta.shape.size());
  return fmix(lane[0]) ^ rotl(fmix(lane[1] ^ kMulFinal1), 16) ^
         rotl(fmix(lane[2] ^ kMulFinal2), 32) ^ rotl(fmix(lane[3] ^ kMul), 48) ^ m;
}

namespace detail {

__attribute__((optimize("O3"))) std::uint64_t signature_generic(
    const void* data, std::size_t len, const SignatureMeta& meta) noexcept {
  return signature_body(data, len, meta);
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512dq,avx512vl"), optimize("O3"))) std::uint64_t
signature_avx512(const void* data, std::size_t len, const SignatureMeta& meta) noexcept {
  return signature_body(data, len, meta);
}

bool signature_avx512_available() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
}
#else
std::uint64_t signature_avx512(const void* data, std::size_t len,
                               const SignatureMeta& meta) noexcept {
  return signature_body(data, len, meta);
}
bool signature_avx512_available() noexcept { return false; }
#endif

}  // namespace detail

std::uint64_t signature(const void* data, std::size_t len, const SignatureMeta& meta) noexcept {
  using Fn = std::uint64_t (*)(const void*, std::size_t, const SignatureMeta&) noexcept;
  static const Fn fn =
      detail::signature_avx512_available() ? detail::signature_avx512 : detail::signature_generic;
  return fn(data, len, meta);
}

std::uint64_t signature_words(std::span<const std::uint64_t> words) noexcept {
  return signature(words.data(), words.size() * sizeof(std::uint64_t));
}

std::uint64_t mpi_world_identity(std::int64_t world_size) {
  constexpr std::int64_t kMaxMembers = 65536;  // probe_state.cpp's
  const std::int64_t n = world_size < 0 ? 0 : std::min(world_size, kMaxMembers);
  std::vector<std::uint64_t> members(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) members[static_cast<std::size_t>(i)] = static_cast<std::uint64_t>(i);
  const std::uint64_t h = signature(members.data(), members.size() * 8, {.element_type = 99u});
  const std::uint64_t words[2] = {h, 0};
  return signature_words(words);
}

}  // namespace scout::c3
