// Signature throughput on one core against memcpy of the same buffer,
// measured in the same run. Target: at least 0.5x memcpy.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "libc3/signature.hpp"

int main() {
  using Clock = std::chrono::steady_clock;
  std::printf("signature code path on this CPU: %s\n",
              scout::c3::detail::signature_avx512_available() ? "AVX-512" : "generic x86-64");
  std::printf("%-10s %12s %12s %12s %8s\n", "size", "memcpy GB/s", "sig GB/s", "ratio", "target");
  for (std::size_t size : {std::size_t{256} << 10, std::size_t{4} << 20, std::size_t{64} << 20}) {
    std::vector<unsigned char> src(size), dst(size);
    for (std::size_t i = 0; i < size; ++i) src[i] = static_cast<unsigned char>(i * 131);
    std::memcpy(dst.data(), src.data(), size);
    const int reps = static_cast<int>(std::max<std::size_t>(4, (std::size_t{1} << 30) / size));
    double best_cpy = 1e9, best_sig = 1e9;
    volatile std::uint64_t sink = 0;
    for (int round = 0; round < 5; ++round) {
      auto t0 = Clock::now();
      for (int r = 0; r < reps; ++r) {
        std::memcpy(dst.data(), src.data(), size);
        sink = sink + dst[static_cast<std::size_t>(r) % size];
      }
      auto t1 = Clock::now();
      for (int r = 0; r < reps; ++r) sink = sink + scout::c3::signature(src.data(), size);
      auto t2 = Clock::now();
      best_cpy = std::min(best_cpy, std::chrono::duration<double>(t1 - t0).count());
      best_sig = std::min(best_sig, std::chrono::duration<double>(t2 - t1).count());
    }
    double gb = static_cast<double>(size) * reps / 1e9;
    double cpy = gb / best_cpy, sig = gb / best_sig;
    std::printf("%-10s %12.2f %12.2f %11.2fx %8s\n",
                size >= (1 << 20) ? (std::to_string(size >> 20) + " MiB").c_str()
                                  : (std::to_string(size >> 10) + " KiB").c_str(),
                cpy, sig, sig / cpy, sig / cpy >= 0.5 ? ">=0.5 ok" : ">=0.5 MISS");
  }
  return 0;
}
