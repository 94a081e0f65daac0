// The typed wire protocol between scoutds: what decodes, what is refused and
// counted (wrong magic, version, kind or size), and that a malformed child
// trigger makes the root gather instead of reading "no trouble".
#include <doctest/doctest.h>

#include <cstring>

#include <fmt/format.h>

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
  CHECK(why.find(fmt::format("expected {}", wire::kVersion)) != std::string::npos);
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

TEST_CASE("wire: gathers combine section by section; a child that is not a gather adds nothing") {
  auto rank = [](int r) {
    RankEvidence e;
    e.rank = r;
    e.node = "n" + std::to_string(r);
    e.attached = true;
    return e;
  };
  wire::Gather a, b;
  a.ranks = {rank(0), rank(1)};
  b.ranks = {rank(2)};
  b.telemetry.push_back(AnomalyFlag{2, "n2", 9.5, 1.0, 3, 7, {{"cpu_util", 0.75}}});
  b.gpu_health.push_back(json{{"bus_id", "0000:17:00.0"}, {"metric", "xid"}});
  a.stacks.add(0, {"MPI_Barrier", "main"}, "");
  a.stacks.add(1, {"MPI_Barrier", "main"}, "");
  b.stacks.add(2, {"nanosleep", "main"}, "");
  auto acc = wire::encode_gather(a);
  wire::combine_gathers(acc, wire::encode_gather(b));
  wire::combine_gathers(acc, wire::encode_json(wire::Kind::kGatherUp, json::array({2, 3})));  // the old shape
  wire::combine_gathers(acc, wire::Bytes{0xde, 0xad});
  auto g = wire::decode_gather(acc);
  REQUIRE(g);
  REQUIRE(g->ranks.size() == 3);
  CHECK(g->ranks[2].rank == 2);
  CHECK(g->ranks[2].node == "n2");
  REQUIRE(g->telemetry.size() == 1);
  CHECK(g->telemetry[0].score == 9.5);
  CHECK(g->gpu_health.size() == 1);
  CHECK(g->refused == 0);
  // The stacks' trees were merged on the way, not appended.
  const auto classes = g->stacks.classes();
  CHECK(classes["text"] == "ranks 0-1 in MPI_Barrier <- main; rank 2 in nanosleep <- main");
  // A child's tree that does not decode is left out and counted; the root
  // counts a section it cannot read.
  const auto before = wire::stats().malformed.load();
  wire::combine_gathers(acc, wire::encode_json(wire::Kind::kGatherUp, json{{"stacks", json{{"n", 3}}}}));
  CHECK(wire::stats().malformed.load() == before + 1);
  CHECK(wire::decode_gather(acc)->stacks.classes() == classes);
  CHECK(wire::decode_gather(wire::encode_json(wire::Kind::kGatherUp, json{{"stacks", json::array()}}))->refused == 1);
  // Entries that do not decode as their section's type are counted, not guessed at.
  auto bad = wire::encode_json(wire::Kind::kGatherUp,
                               json{{"ranks", json::array({json{{"rank", "zero"}}, rank(4)})},
                                    {"replay", json::array({json{{"observer", 1}}})},
                                    {"gpu_health", json::array({3})}});
  auto gb = wire::decode_gather(bad);
  REQUIRE(gb);
  CHECK(gb->ranks.size() == 1);
  CHECK(gb->refused == 3);
  CHECK_FALSE(wire::decode_gather(wire::encode_json(wire::Kind::kGatherUp, json::array())));
  auto doubles = wire::encode_doubles(wire::Kind::kLearnUp, {1.0, 2.0});
  wire::concat_doubles(doubles, wire::encode_doubles(wire::Kind::kLearnUp, {3.0}));
  CHECK(wire::decode_doubles(doubles, wire::Kind::kLearnUp) == std::vector<double>{1.0, 2.0, 3.0});
  std::uint8_t odd[3] = {1, 2, 3};
  CHECK_FALSE(wire::decode_doubles(wire::encode(wire::Kind::kLearnDown, odd, 3), wire::Kind::kLearnDown));
}

TEST_CASE("wire: the down message is typed; a field of the wrong type refuses the message and says which") {
  wire::Down d;
  d.stop = true;
  d.gather = true;
  d.events = json::array({json{{"type", "resolve"}, {"key", "hang:1"}}});
  d.book_digest = std::array<std::uint64_t, 3>{3, 1, 0x9e3779b97f4a7c15ull};
  d.median_compute_s = 0.25;
  d.replay_start = 7;
  d.replay_rerun.push_back({2, 7, "cpu3", "gemm", 3});
  d.telemetry_held = true;
  auto back = wire::decode_down(wire::encode_down(d));
  REQUIRE(back);
  CHECK(back->stop);
  CHECK(back->gather);
  CHECK_FALSE(back->learn);
  CHECK(back->telemetry_held);
  CHECK_FALSE(wire::decode_down(wire::encode_down(wire::Down{}))->telemetry_held);
  CHECK(back->events == d.events);
  CHECK(back->book_digest == d.book_digest);
  CHECK_FALSE(back->book);
  CHECK(back->median_compute_s == 0.25);
  CHECK(back->replay_start == 7);
  REQUIRE(back->replay_rerun.size() == 1);
  CHECK(back->replay_rerun[0].device == "cpu3");
  CHECK(back->replay_rerun[0].times == 3);
  const auto before = wire::stats().malformed.load();
  std::string why;
  for (auto bad : {json{{"telemetry_held", 1}}, json{{"events", json::object()}}, json{{"book_digest", json::array({1})}},
                   json{{"replay_start", "7"}}, json{{"replay_rerun", json::array({json{{"observer", 1}}})}},
                   json::array()}) {
    CHECK_FALSE(wire::decode_down(wire::encode_json(wire::Kind::kDecisionDown, bad), &why));
    CHECK_FALSE(why.empty());
  }
  CHECK(wire::stats().malformed.load() == before + 6);
  wire::decode_down(wire::encode_json(wire::Kind::kDecisionDown, json{{"stop", "yes"}}), &why);
  CHECK(why == "\"stop\": a boolean");
  // Unknown fields (a later version's) are ignored; times is clamped.
  auto later = wire::decode_down(wire::encode_json(
      wire::Kind::kDecisionDown,
      json{{"gather", true},
           {"future", 1},
           {"replay_rerun", json::array({json{{"observer", 0}, {"cycle", 1}, {"device", "cpu0"},
                                              {"recipe", "gemm"}, {"times", 100000}}})}}));
  REQUIRE(later);
  CHECK(later->gather);
  CHECK(later->replay_rerun.at(0).times == 100);
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

// The observers' incident books meet in the trigger (least and greatest
// digest) and, when they differ, in the gather's `book` section: each event
// once, whoever sent it.
TEST_CASE("wire: book digests reduce to least and greatest; book events merge once each") {
  wire::Trigger a{}, b{};
  for (int k = 0; k < 3; ++k) {
    a.book_min[k] = a.book_max[k] = 10 + k;
    b.book_min[k] = b.book_max[k] = 20 + k;
  }
  auto acc = wire::encode_trigger(a);
  wire::combine_triggers(acc, wire::encode_trigger(b));
  auto t = wire::decode_trigger(acc);
  REQUIRE(t);
  CHECK(t->book_min[0] == 10);
  CHECK(t->book_max[0] == 20);
  CHECK(t->book_max[2] == 22);

  const json v1 = {{"op", "new"}, {"key", "stall:3"}, {"verdict", {{"id", 1}, {"vkey", "1.0.o0.5.1"}}}};
  const json v2 = {{"op", "new"}, {"key", "crash:4"}, {"verdict", {{"id", 1}, {"vkey", "1.0.o1.6.1"}}}};
  const json r1 = {{"op", "resolve"}, {"key", "stall:3"}, {"id", 1}, {"vkey", "1.0.o0.5.1"}, {"at", "T"}};
  // Two verdicts without a stable key, resolved: two resolutions, not one.
  const json r2 = {{"op", "resolve"}, {"key", "a"}, {"id", 7}, {"vkey", ""}, {"at", "T"}};
  const json r3 = {{"op", "resolve"}, {"key", "b"}, {"id", 8}, {"vkey", ""}, {"at", "T"}};
  wire::Gather ga, gb;
  ga.book = {v1, r1, r2};
  gb.book = {v1, v2, r1, r3};
  auto g = wire::encode_gather(ga);
  wire::combine_gathers(g, wire::encode_gather(gb));
  auto out = wire::decode_gather(g);
  REQUIRE(out);
  CHECK(out->book.size() == 5);  // v1, r1, r2, v2, r3
  CHECK(out->refused == 0);
}
