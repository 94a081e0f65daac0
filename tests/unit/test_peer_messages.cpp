// The typed wire protocol between scoutds: what decodes, what is refused and
// counted (wrong magic, version, kind or size), and that a malformed child
// trigger makes the root gather instead of reading "no trouble".
#include <doctest/doctest.h>

#include <cstring>

#include "libc3/round_message.hpp"
#include "scoutd/wire/peer_messages.hpp"

using namespace scout::scoutd;
using nlohmann::json;

TEST_CASE("wire: a trigger round-trips; wrong size, magic, version or kind is refused and counted") {
  wire::Trigger t{};
  t.max_stall_s = 3.5;
  t.waiting = 7;
  t.deaths = 1;
  auto b = wire::encode_trigger(t);
  auto d = wire::decode_trigger(b);
  REQUIRE(d);
  CHECK(d->max_stall_s == 3.5);
  CHECK(d->waiting == 7);

  const auto malformed0 = wire::stats().malformed.load(), version0 = wire::stats().wrong_version.load();
  auto shorter = b;
  shorter.pop_back();
  CHECK_FALSE(wire::decode_trigger(shorter));  // length field no longer matches
  auto bad_magic = b;
  bad_magic[0] ^= 1;
  CHECK_FALSE(wire::decode_trigger(bad_magic));
  auto other_kind = wire::encode_json(wire::Kind::kDecisionDown, json::object());
  CHECK_FALSE(wire::decode_trigger(other_kind));
  // A well-framed message of the right kind but the wrong payload size.
  std::uint32_t small = 3;
  CHECK_FALSE(wire::decode_trigger(wire::encode(wire::Kind::kTriggerUp, &small, sizeof small)));
  CHECK(wire::stats().malformed.load() == malformed0 + 4);
  auto newer = b;
  newer[4] = wire::kVersion + 1;
  std::string why;
  CHECK_FALSE(wire::decode(newer, wire::Kind::kTriggerUp, &why));
  CHECK(why.find("expected 1") != std::string::npos);
  CHECK(wire::stats().wrong_version.load() == version0 + 1);
  // A huge length field is compared, never added: no overflow, refused.
  auto huge = b;
  std::uint32_t len = 0xFFFFFFF0u;
  std::memcpy(huge.data() + 8, &len, 4);
  CHECK_FALSE(wire::decode(huge, wire::Kind::kTriggerUp));
  // An empty message (an absent contribution) is not counted.
  const auto m = wire::stats().malformed.load();
  CHECK_FALSE(wire::decode_trigger({}));
  CHECK(wire::stats().malformed.load() == m);
}

TEST_CASE("wire: a malformed child trigger is not 'no trouble': the root sees it") {
  wire::Trigger mine{};
  mine.attached = 2;
  auto acc = wire::encode_trigger(mine);
  wire::combine_triggers(acc, wire::Bytes{1, 2, 3});
  auto d = wire::decode_trigger(acc);
  REQUIRE(d);
  CHECK(d->malformed == 1);
  CHECK(d->attached == 2);
  wire::Trigger child{};
  child.attached = 3;
  child.stop = 1;
  wire::combine_triggers(acc, wire::encode_trigger(child));
  d = wire::decode_trigger(acc);
  CHECK(d->attached == 5);
  CHECK(d->stop == 1);
  CHECK(d->malformed == 1);
}

TEST_CASE("wire: hello strings must be terminated inside their field") {
  auto h = wire::decode_hello(wire::encode_hello("n3", 0, 3, 99));
  REQUIRE(h);
  CHECK(std::string(h->node) == "n3");
  wire::Hello raw{};
  std::memset(raw.node, 'x', sizeof raw.node);
  CHECK_FALSE(wire::decode_hello(wire::encode(wire::Kind::kHello, &raw, sizeof raw)));
}

TEST_CASE("wire: gathers concatenate; a child that is not a JSON array adds nothing") {
  auto acc = wire::encode_json(wire::Kind::kGatherUp, json::array({1}));
  wire::concat_gathers(acc, wire::encode_json(wire::Kind::kGatherUp, json::array({2, 3})));
  wire::concat_gathers(acc, wire::encode_json(wire::Kind::kGatherUp, json::object()));
  wire::concat_gathers(acc, wire::Bytes{0xde, 0xad});
  auto j = wire::decode_json(acc, wire::Kind::kGatherUp);
  REQUIRE(j);
  CHECK(*j == json::array({1, 2, 3}));
  auto doubles = wire::encode_doubles(wire::Kind::kLearnUp, {1.0, 2.0});
  wire::concat_doubles(doubles, wire::encode_doubles(wire::Kind::kLearnUp, {3.0}));
  CHECK(wire::decode_doubles(doubles, wire::Kind::kLearnUp) == std::vector<double>{1.0, 2.0, 3.0});
  std::uint8_t odd[3] = {1, 2, 3};
  CHECK_FALSE(wire::decode_doubles(wire::encode(wire::Kind::kLearnDown, odd, 3), wire::Kind::kLearnDown));
}

// The round layer under the typed messages: a peer's header lengths are
// compared with what arrived without adding them (they used to be summed in
// 64 bits, and a payload_len near 2^64 wrapped the check).
TEST_CASE("round messages whose length fields do not add up are dropped") {
  struct H {
    std::uint32_t magic, nlost;
    std::uint64_t round, payload_len;
  };
  auto make = [](std::uint32_t nlost, std::uint64_t payload_len, std::size_t extra) {
    H h{0x53434F55, nlost, 7, payload_len};
    std::vector<std::uint8_t> b(sizeof h + extra);
    std::memcpy(b.data(), &h, sizeof h);
    return b;
  };
  std::uint64_t round = 0;
  std::vector<int> lost;
  scout::c3::Bytes payload;
  auto ok = make(1, 3, 4 + 3);
  REQUIRE(scout::c3::parse_round_message(ok.data(), ok.size(), round, lost, payload));
  CHECK(round == 7);
  CHECK(lost.size() == 1);
  CHECK(payload.size() == 3);
  // sizeof h + 4 * nlost + payload_len wraps to the real size.
  auto wrap = make(1, UINT64_MAX - 23 - 4 + 8, 8);
  CHECK_FALSE(scout::c3::parse_round_message(wrap.data(), wrap.size(), round, lost, payload));
  auto big_lost = make(0xffffffffu, 0, 16);
  CHECK_FALSE(scout::c3::parse_round_message(big_lost.data(), big_lost.size(), round, lost, payload));
  auto short_msg = make(0, 0, 0);
  short_msg.resize(10);
  CHECK_FALSE(scout::c3::parse_round_message(short_msg.data(), short_msg.size(), round, lost, payload));
  auto magic = make(0, 0, 0);
  magic[0] ^= 1;
  CHECK_FALSE(scout::c3::parse_round_message(magic.data(), magic.size(), round, lost, payload));
}
