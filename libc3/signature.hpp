// libc3 signatures: a 64-bit fingerprint of a byte buffer plus its metadata
// (length, element type, shape). Used by the probe (collective fingerprints,
// output signatures) and by replay. Must stay allocation-free and lock-free:
// it runs inside the training process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace scout::c3 {

// Metadata that is part of a signature: equal bytes with a different
// element type or shape are different tensors.
struct SignatureMeta {
  std::uint32_t element_type = 0;  // caller-defined code (e.g. kElemF64)
  std::span<const std::int64_t> shape{};
};

inline constexpr std::uint32_t kElemBytes = 0;
inline constexpr std::uint32_t kElemF32 = 1;
inline constexpr std::uint32_t kElemF64 = 2;
inline constexpr std::uint32_t kElemI32 = 3;
inline constexpr std::uint32_t kElemI64 = 4;
inline constexpr std::uint32_t kElemU64 = 5;

// Signature of `len` bytes at `data` with metadata `meta`.
// Guarantees: any single-bit change of the buffer changes the signature
// (each 8-byte word goes through a bijective mix into one lane, and lanes are
// combined through bijections); words are keyed by position, so moving or
// swapping elements changes it (with probability 1 - 2^-64).
std::uint64_t signature(const void* data, std::size_t len,
                        const SignatureMeta& meta = {}) noexcept;

// Signature of a sequence of 64-bit words with no metadata (fingerprints).
std::uint64_t signature_words(std::span<const std::uint64_t> words) noexcept;

// The identity the MPI probe gives MPI_COMM_WORLD of a `world_size`-rank
// job (probe_state.cpp, compute_identity: the signature of its members'
// world ranks, at most 65,536 of them, first occurrence): a verdict says
// "MPI_COMM_WORLD" for it.
std::uint64_t mpi_world_identity(std::int64_t world_size);

// The two code paths signature() chooses between (for tests and benches).
namespace detail {
std::uint64_t signature_generic(const void* data, std::size_t len, const SignatureMeta& meta) noexcept;
std::uint64_t signature_avx512(const void* data, std::size_t len, const SignatureMeta& meta) noexcept;
bool signature_avx512_available() noexcept;
}  // namespace detail

}  // namespace scout::c3
