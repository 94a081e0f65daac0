// libc3 signatures: every single-bit flip changes the signature, position
// matters, metadata matters.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "libc3/signature.hpp"

using scout::c3::signature;
using scout::c3::SignatureMeta;

TEST_CASE("every single-bit flip changes the signature (exhaustive, 0..96 bytes)") {
  std::mt19937_64 rng(42);
  for (std::size_t len = 1; len <= 96; ++len) {
    std::vector<unsigned char> buf(len);
    for (auto& b : buf) b = static_cast<unsigned char>(rng());
    const auto base = signature(buf.data(), len);
    for (std::size_t bit = 0; bit < len * 8; ++bit) {
      buf[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
      CHECK_MESSAGE(signature(buf.data(), len) != base, "len ", len, " bit ", bit);
      buf[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    }
    CHECK(signature(buf.data(), len) == base);  // restored: deterministic
  }
}

TEST_CASE("single-bit flips at random positions of a large buffer") {
  std::mt19937_64 rng(7);
  std::vector<double> v(1 << 20);
  for (auto& x : v) x = std::normal_distribution<double>()(rng);
  auto* bytes = reinterpret_cast<unsigned char*>(v.data());
  const std::size_t len = v.size() * sizeof(double);
  const auto base = signature(bytes, len);
  for (int t = 0; t < 2000; ++t) {
    std::size_t bit = rng() % (len * 8);
    bytes[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    CHECK(signature(bytes, len) != base);
    bytes[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
  }
}

TEST_CASE("swapping two elements changes the signature, also x and -x") {
  std::vector<double> v = {1.0, -1.0, 2.5, 3.25, -7.0, 1.0, 0.0, 42.0, -1.0};
  const auto base = signature(v.data(), v.size() * 8);
  for (std::size_t i = 0; i < v.size(); ++i)
    for (std::size_t j = i + 1; j < v.size(); ++j) {
      if (v[i] == v[j]) continue;
      std::swap(v[i], v[j]);
      CHECK_MESSAGE(signature(v.data(), v.size() * 8) != base, i, " <-> ", j);
      std::swap(v[i], v[j]);
    }
  std::vector<float> f = {1.f, 2.f, 3.f, 4.f, 5.f};
  const auto fb = signature(f.data(), f.size() * 4);
  std::swap(f[0], f[1]);
  CHECK(signature(f.data(), f.size() * 4) != fb);
}

TEST_CASE("metadata is part of the signature") {
  std::vector<unsigned char> z(64, 0);
  const std::int64_t s1[] = {8, 8};
  const std::int64_t s2[] = {4, 16};
  CHECK(signature(z.data(), 64) != signature(z.data(), 63));  // length
  CHECK(signature(z.data(), 64, {scout::c3::kElemF64, s1}) !=
        signature(z.data(), 64, {scout::c3::kElemF32, s1}));  // element type
  CHECK(signature(z.data(), 64, {scout::c3::kElemF64, s1}) !=
        signature(z.data(), 64, {scout::c3::kElemF64, s2}));  // shape
  CHECK(signature(nullptr, 0) == signature(nullptr, 0));
}

TEST_CASE("the generic and the AVX-512 code paths give the same signatures") {
  if (!scout::c3::detail::signature_avx512_available()) {
    MESSAGE("this CPU has no AVX-512: only the generic path can run here");
    return;
  }
  std::mt19937_64 rng(99);
  for (std::size_t len : {0, 1, 7, 8, 31, 32, 33, 255, 4096, 100003}) {
    std::vector<unsigned char> buf(len);
    for (auto& b : buf) b = static_cast<unsigned char>(rng());
    const std::int64_t shape[] = {static_cast<std::int64_t>(len)};
    SignatureMeta m{scout::c3::kElemBytes, shape};
    CHECK(scout::c3::detail::signature_generic(buf.data(), len, m) ==
          scout::c3::detail::signature_avx512(buf.data(), len, m));
    CHECK(signature(buf.data(), len, m) == scout::c3::detail::signature_generic(buf.data(), len, m));
  }
}

// The identities the MPI probe gave MPI_COMM_WORLD in real 2-, 3- and
// 4-rank jobs (test 51's sentences before they said the name): scoutd's
// copy of the computation must give the same, or verdicts name a hash.
TEST_CASE("MPI_COMM_WORLD's identity is the probe's") {
  CHECK(scout::c3::mpi_world_identity(2) == 0x926e8a79e4eaaae7ULL);
  CHECK(scout::c3::mpi_world_identity(3) == 0xaccb069225f0e11bULL);
  CHECK(scout::c3::mpi_world_identity(4) == 0x83b3fc32f09e073aULL);
  CHECK(scout::c3::mpi_world_identity(5) != scout::c3::mpi_world_identity(4));
}
