// The bytes of one consensus-round message between scoutds (tree_round.hpp):
// a 24-byte header (magic, number of lost members, round, payload length),
// the lost members (world ranks), the payload. No MPI here, so the parser
// can be unit-tested and fuzzed on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace scout::c3 {

using Bytes = std::vector<std::uint8_t>;

// Most members a message may list as lost (bounds what a peer can make us
// allocate).
inline constexpr std::uint32_t kMaxLost = 1u << 20;

Bytes encode_round_message(std::uint64_t round, const std::vector<int>& lost, const Bytes& payload);

// Parses one message as it came off the wire; false when the bytes are not a
// round message or their lengths do not add up exactly.
bool parse_round_message(const std::uint8_t* data, std::size_t n, std::uint64_t& round, std::vector<int>& lost,
                         Bytes& payload);

}  // namespace scout::c3
