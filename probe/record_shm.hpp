// The rank record's shared-memory file, as every probe creates it (the MPI
// probe and the NCCL probe): name, exclusive creation, ownership check,
// header. No MPI, no CUDA here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "libc3/rank_record.hpp"

namespace scout::probe {

// Collective fingerprint: a short multiply-xor chain and one finaliser; the
// full libc3 signature is for buffers, this runs on every collective call.
inline std::uint64_t fingerprint_of(std::uint64_t kind, std::uint64_t comm, std::uint64_t count,
                                    std::uint64_t dt, std::uint64_t op, std::uint64_t root) noexcept {
  constexpr std::uint64_t k = 0x9E3779B97F4A7C15ULL;
  std::uint64_t h = 0x5C0075C0075C0075ULL;
  for (std::uint64_t v : {kind, comm, count, dt, op, root}) h = (h ^ v) * k + (h >> 29);
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDULL;
  h ^= h >> 33;
  return h;
}


// The job and step this process belongs to, from SCOUT_JOB_ID and
// SCOUT_STEP_ID (default "0"); false (after one message on stderr when they
// are malformed) when scout does not watch it or SCOUT_PROBE=off.
bool record_env(const char* who, const char** job, const char** step) noexcept;

// Creates /scout.<job>.<step>.<rank> of `bytes` (or reuses this user's own
// regular file of that name: a rank restarted in the same step), clears it
// and writes the version-5 header fields. Not yet published: the caller
// fills what else its version holds, then calls record_publish. Null, after
// a message on stderr naming `who`, when the file cannot be had; `name`
// receives the shm name (for record_close).
c3::RankRecord* record_create(const char* who, const char* job, const char* step, int rank, int size,
                              std::uint32_t version, std::size_t bytes, char* name, std::size_t name_cap) noexcept;
// Marks it initialised and publishes it (the magic, last).
void record_publish(c3::RankRecord& r) noexcept;
// Marks it finalised and unmaps it. The name stays while the process lives
// (removed when it exits, by this process only, not by a forked child): a
// rank that finalizes before its observer attaches is still seen finalized
// while its peers wait for it (a rank stuck in MPI_Finalize's fence too).
// scoutd and scout-run remove their job's names at its end (a rank killed
// in MPI_Finalize leaves its name to them).
void record_close(c3::RankRecord* r, const char* name, std::size_t bytes) noexcept;

}  // namespace scout::probe
