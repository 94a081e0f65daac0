// Round message framing (see round_message.hpp).
#include "libc3/round_message.hpp"

#include <cstring>

namespace scout::c3 {

namespace {
constexpr std::uint32_t kMsgMagic = 0x53434F55;  // "SCOU"

struct WireHeader {
  std::uint32_t magic;
  std::uint32_t nlost;
  std::uint64_t round;
  std::uint64_t payload_len;
};
}  // namespace

Bytes encode_round_message(std::uint64_t round, const std::vector<int>& lost, const Bytes& payload) {
  WireHeader h{kMsgMagic, static_cast<std::uint32_t>(lost.size()), round, payload.size()};
  Bytes buf(sizeof h + lost.size() * sizeof(int) + payload.size());
  std::memcpy(buf.data(), &h, sizeof h);
  if (!lost.empty()) std::memcpy(buf.data() + sizeof h, lost.data(), lost.size() * sizeof(int));
  if (!payload.empty()) std::memcpy(buf.data() + sizeof h + lost.size() * sizeof(int), payload.data(), payload.size());
  return buf;
}

bool parse_round_message(const std::uint8_t* data, std::size_t n, std::uint64_t& round, std::vector<int>& lost,
                         Bytes& payload) {
  WireHeader h;
  if (n < sizeof h) return false;
  std::memcpy(&h, data, sizeof h);
  if (h.magic != kMsgMagic) return false;
  // Every length a peer wrote is compared against what arrived, by division
  // and subtraction only: no sum of its fields can wrap.
  const std::size_t rest = n - sizeof h;
  if (h.nlost > rest / sizeof(int) || h.nlost > kMaxLost) return false;
  const std::size_t lost_bytes = std::size_t{h.nlost} * sizeof(int);
  if (h.payload_len != rest - lost_bytes) return false;
  lost.resize(h.nlost);
  if (h.nlost) std::memcpy(lost.data(), data + sizeof h, lost_bytes);
  payload.assign(data + sizeof h + lost_bytes, data + n);
  round = h.round;
  return true;
}

}  // namespace scout::c3
