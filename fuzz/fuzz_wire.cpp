// libFuzzer target: the bytes one scoutd receives from another: the round
// framing (lengths, lost members), the typed messages inside (hello,
// trigger, JSON gathers, doubles), the evidence entries decoded from a
// gather, and the detectors that then read that evidence.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "libc3/round_message.hpp"
#include "scoutd/detect/progress_detector.hpp"
#include "scoutd/observe/rank_evidence.hpp"
#include "scoutd/wire/peer_messages.hpp"

using namespace scout;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint64_t round = 0;
  std::vector<int> lost;
  c3::Bytes payload;
  if (c3::parse_round_message(data, size, round, lost, payload)) {
    if (lost.size() > c3::kMaxLost) __builtin_trap();
  } else {
    payload.assign(data, data + size);  // the typed layer on its own
  }
  namespace w = scoutd::wire;
  (void)w::decode_hello(payload);
  if (auto t = w::decode_trigger(payload)) {
    c3::Bytes acc = w::encode_trigger(*t);
    w::combine_triggers(acc, payload);
  }
  (void)w::decode_doubles(payload, w::Kind::kLearnUp);
  if (w::decode_json(payload, w::Kind::kGatherUp)) {
    c3::Bytes acc = w::encode_gather(w::Gather{});
    w::combine_gathers(acc, payload);
  }
  if (auto g = w::decode_gather(payload)) {
    scoutd::DetectorOptions opt;
    (void)scoutd::detect_crash(g->ranks, opt);
    (void)scoutd::detect_progress(g->ranks, opt);
    (void)g->stacks.classes();
  }
  (void)w::decode_down(payload);
  return 0;
}
