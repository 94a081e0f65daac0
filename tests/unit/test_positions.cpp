// Collective positions spread by rooted collectives and sub-communicators,
// the ranks that went on voting with their recent fingerprints, and a
// collective's arguments in the evidence (see rule_consensus.cpp).
#include <doctest/doctest.h>

#include "libc3/rank_record.hpp"
#include "scoutd/detect/progress_detector.hpp"
#include "tests/unit/progress_test_util.hpp"

using namespace scout::scoutd;
using namespace progress_test;
namespace c3 = scout::c3;

TEST_CASE("evidence: a collective's arguments and a stalled rank's recent fingerprints round-trip; bad ones refused") {
  auto v = job(1, 3, true, 1.5)[0];
  v.coll_count = 4;
  v.coll_datatype = 7;
  v.coll_op = 3;
  v.coll_root = 2;
  v.recent = {{2, 0xFFFFFFFFFFFFFFFFULL, 0xC0}, {1, 0xA, 0xC1}};
  nlohmann::json j = v;
  auto back = j.get<RankEvidence>();
  CHECK(back.coll_count == 4);
  CHECK(back.coll_datatype == 7);
  CHECK(back.coll_op == 3);
  CHECK(back.coll_root == 2);
  CHECK(back.recent == v.recent);
  CHECK(back.p2p_tag == -1);
  v.p2p_call = "MPI_Send";
  v.p2p_tag = 5;
  j = v;
  CHECK(j.get<RankEvidence>().p2p_tag == 5);
  // Which way a completion call's requests go: one letter per listed peer.
  v.p2p_call = "MPI_Waitall";
  v.p2p_peers = {1, 2};
  v.p2p_dirs = "rs";
  CHECK(nlohmann::json(v).get<RankEvidence>().p2p_dirs == "rs");
  for (const char* bad : {"rsr", "rx", "R"}) {
    nlohmann::json b = v;
    b["p2p"]["dirs"] = bad;
    CHECK_THROWS_WITH_AS(b.get<RankEvidence>(), doctest::Contains("p2p.dirs: expected one of r, s, b or ?"),
                         std::invalid_argument);
  }
  {
    nlohmann::json b = v;
    b["p2p"]["dirs"] = 7;
    CHECK_THROWS_AS(b.get<RankEvidence>(), std::invalid_argument);
  }
  for (long long bad : {-2LL, 0x80000000LL}) {
    auto b = j;
    b["p2p"]["tag"] = bad;
    CHECK_THROWS_WITH_AS(b.get<RankEvidence>(), doctest::Contains("p2p.tag: expected an MPI tag"), std::invalid_argument);
  }
  for (const char* bad : {R"([4, 7, 3])", R"([4, -7, 3, 0])", R"("4 7 3 0")"}) {
    auto b = j;
    b["args"] = nlohmann::json::parse(bad);
    CHECK_THROWS_WITH_AS(b.get<RankEvidence>(), doctest::Contains("args: expected"), std::invalid_argument);
  }
  for (const char* bad : {R"([[1, "xyz", "00000000000000c0"]])", R"([[-1, "000000000000000a", "00000000000000c0"]])",
                          R"([[1, "000000000000000a"]])", R"([[1,"a"],[2,"b"],[3,"c"],[4,"d"],[5,"e"]])"}) {
    auto b = j;
    b["recent"] = nlohmann::json::parse(bad);
    CHECK_THROWS_WITH_AS(b.get<RankEvidence>(), doctest::Contains("recent: expected"), std::invalid_argument);
  }
}

TEST_CASE("a rank behind positions a strict majority reached, spread by rooted collectives: named") {
  // A Gatherv's senders went on into the Allgatherv after it (302), its
  // root is still in it (301): all wait for rank 3, computing at 300.
  auto v = job(4, 302, true, 3.0);
  v[0].seq = 301;
  v[0].kind = c3::kGatherv;
  v[3].seq = 300;
  v[3].in_collective = false;
  v[3].state = 'R';
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kHang);
  CHECK(d[0].status == c3::VerdictStatus::kAttributed);
  CHECK(d[0].ranks == std::vector<int>{3});
  CHECK(d[0].evidence["majority_position"] == 301);
  CHECK(d[0].evidence["majority_count"] == 3);
  // Two at 300 of four: nobody is behind a strict majority.
  v[0].seq = 300;
  v[0].in_collective = false;
  CHECK(detect_progress(v, opt())[0].status == c3::VerdictStatus::kInconclusive);
}

TEST_CASE("a rank that went on past the position votes with the fingerprint it had there") {
  // Bcast with another root at rank 2: rank 1 received and went on into the
  // barrier (22); ranks 0 and 2 both believe they send (21).
  auto v = job(3, 21, true, 3.0);
  for (auto& e : v) e.kind = c3::kBcast;
  v[2].fingerprint = 0xBBBB;
  v[1].seq = 22;
  v[1].kind = c3::kBarrier;
  v[1].fingerprint = 0xCCCC;
  v[1].recent = {{21, 0xAAAA, 0xC0}, {20, 0x1111, 0xC0}};
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kDivergence);
  CHECK(d[0].status == c3::VerdictStatus::kAttributed);
  CHECK(d[0].ranks == std::vector<int>{2});
  CHECK(d[0].evidence["went_on"] == nlohmann::json::array({1}));
  CHECK(d[0].evidence["groups"].size() == 2);  // the two at the position
  // Without its recent collectives it does not vote: two, no majority.
  v[1].recent.clear();
  d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kDivergence);
  CHECK(d[0].status == c3::VerdictStatus::kInconclusive);
  // The same call everywhere it stopped, one rank past it: a communication
  // hang, said (it was silent).
  v[2].fingerprint = 0xAAAA;
  d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kHang);
  CHECK(d[0].status == c3::VerdictStatus::kInconclusive);
  CHECK(d[0].evidence["went_on"] == nlohmann::json::array({1}));
}

TEST_CASE("behind inside a collective a strict majority went on past: the one that called another is named") {
  // Bcast with another root at rank 7 of 8: six ranks received and went on
  // into the barrier (22); rank 0, the root, still sends to rank 7, which
  // believes it is the root itself (21).
  auto v = job(8, 22, true, 3.0);
  for (auto& e : v) {
    e.kind = c3::kBarrier;
    e.fingerprint = 0xCCCC;
    e.recent = {{21, 0xAAAA, 0xC0}, {20, 0x1111, 0xC0}};
  }
  for (int r : {0, 7}) {
    v[r].seq = 21;
    v[r].kind = c3::kBcast;
    v[r].fingerprint = r == 0 ? 0xAAAA : 0xBBBB;
    v[r].recent = {{20, 0x1111, 0xC0}};
  }
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kDivergence);
  CHECK(d[0].status == c3::VerdictStatus::kAttributed);
  CHECK(d[0].ranks == std::vector<int>{7});
  CHECK(d[0].evidence["went_on_count"] == 6);
  // The same call at both (what the majority called): they are behind,
  // named as before (no divergence to excuse rank 0).
  v[7].fingerprint = 0xAAAA;
  d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kHang);
  CHECK(d[0].ranks == std::vector<int>{0, 7});
}

TEST_CASE("positions of ranks that used another communicator are not compared, nor their votes") {
  // Ranks 0, 1 and 3 made two collectives on a sub-communicator that 2 and
  // 4 are not in: 0 and 1 wait there (p+2), 3 computes (p+1), 2 and 4 wait
  // in the barrier of the world (p). Nobody is behind anybody.
  auto v = job(5, 12, true, 3.0);
  for (int r : {0, 1, 3}) {
    v[r].comm_id = 0x5;
    v[r].comm_wait = {{0x5, 0.001}, {0xC0, 0.001}};
    v[r].recent = {{11, 0x5555, 0x5}, {10, 0x5554, 0x5}};
    v[r].fingerprint = 0x5555;
  }
  v[3].seq = 11;
  v[3].in_collective = false;
  v[3].state = 'R';
  v[2].seq = v[4].seq = 10;
  v[2].kind = v[4].kind = c3::kBarrier;
  auto d = detect_progress(v, opt());
  for (auto& x : d) {
    CHECK(x.ranks != std::vector<int>{2, 4});
    CHECK(x.status == c3::VerdictStatus::kInconclusive);
  }
}

TEST_CASE("a master gone on to gather while its workers compute is no hang of the collectives") {
  auto v = job(4, 7, false, 5.0);
  v[0].seq = 8;
  v[0].in_collective = true;
  v[0].kind = c3::kGather;
  for (int r : {1, 2, 3}) v[r].state = 'R';
  CHECK(detect_progress(v, opt()).empty());
}
