// Completion calls' requests with their tags (record version 10): stated in
// the groups of a verdict, carried in the evidence, refused when they
// contradict the directions. They do not make a cycle a deadlock: they are
// the tags the wait began with, and some of its requests may have completed
// since (a correct exchange stuck on a link reads the same).
#include <doctest/doctest.h>

#include "libc3/rank_record.hpp"
#include "scoutd/detect/call_groups.hpp"
#include "scoutd/detect/progress_detector.hpp"
#include "tests/unit/progress_test_util.hpp"

using namespace scout::scoutd;
using namespace progress_test;
namespace c3 = scout::c3;
using nlohmann::json;

namespace {
// A rank in MPI_Waitall on requests to and from `peers`, with their
// directions and tags as the probe records them.
void waitall(RankEvidence& e, std::vector<int> peers, std::string dirs, std::vector<std::int32_t> recv,
             std::vector<std::int32_t> send) {
  e.in_collective = false;
  e.p2p_call = "MPI_Waitall";
  e.p2p_comm = 0xC0;
  e.p2p_peers = std::move(peers);
  e.p2p_dirs = std::move(dirs);
  e.p2p_recv_tags = std::move(recv);
  e.p2p_send_tags = std::move(send);
}
}  // namespace

TEST_CASE("a halo on two ranks with a wrongly tagged message: still a possible stuck transfer, the tags stated") {
  // Rank 0 receives tag 2 from rank 1 and sends it tag 1; rank 1 receives
  // tag 1 from rank 0 and sends it tag 1 (it should be 2). A correct
  // program whose rank 0 sends tag 1 over a stuck link, after a blocking
  // receive that took rank 1's first send, leaves the same records.
  auto v = job(2, 5, false, 3.0);
  waitall(v[0], {1}, "b", {2}, {1});
  waitall(v[1], {0}, "b", {1}, {1});
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kHang);
  CHECK(d[0].status == c3::VerdictStatus::kInconclusive);
  // Each rank's group says which tag goes which way, per peer.
  json g = state_groups(v);
  REQUIRE(g.size() == 2);
  CHECK(g[0]["ranks"] == json::array({0}));
  CHECK(g[0]["tags"] == json::parse(R"({"recv": [2], "send": [1]})"));
  CHECK(g[1]["tags"] == json::parse(R"({"recv": [1], "send": [1]})"));
  // The sentence says which tag each awaits from and sends to its peer.
  json ev = {{"groups", g}};
  describe_groups(ev, nullptr);
  CHECK(ev["summary"] == "rank 0 in MPI_Waitall for rank 1 (receives tag 2 from rank 1, sends tag 1 to rank 1), rank 1 in "
                         "MPI_Waitall for rank 0 (receives tag 1 from rank 0, sends tag 1 to rank 0)");
  // Ranks alike but for their tags are separate groups.
  auto w = job(3, 5, false, 3.0);
  waitall(w[0], {2}, "r", {4}, {-2});
  waitall(w[1], {2}, "r", {5}, {-2});
  waitall(w[2], {0, 1}, "ss", {-2, -2}, {4, 4});
  CHECK(state_groups(w).size() == 3);
  w[1].p2p_recv_tags = {4};
  CHECK(state_groups(w).size() == 2);
  // Without the tags (an older probe's record), no tags in the group.
  for (auto& e : w) e.p2p_recv_tags.clear(), e.p2p_send_tags.clear();
  for (auto& x : state_groups(w)) CHECK_FALSE(x.contains("tags"));
}

TEST_CASE("evidence: a completion call's tags travel with it, and bad tags are refused with what was expected") {
  RankEvidence e;
  e.rank = 0;
  e.p2p_call = "MPI_Waitall";
  e.p2p_peers = {1, 2};
  e.p2p_dirs = "rs";
  e.p2p_recv_tags = {2, c3::kTagNone};
  e.p2p_send_tags = {c3::kTagNone, c3::kTagSeveral};
  json j = e;
  CHECK(j["p2p"]["tags"] == json::parse(R"({"recv": [2, -2], "send": [-2, -1]})"));
  const RankEvidence back = j.get<RankEvidence>();
  CHECK(back.p2p_recv_tags == e.p2p_recv_tags);
  CHECK(back.p2p_send_tags == e.p2p_send_tags);
  for (const char* bad : {R"({"recv": [2], "send": [-2, -1]})", R"({"recv": [2, -3], "send": [-2, -1]})",
                          R"({"recv": [2, 4294967296], "send": [-2, -1]})", R"([2, -2])",
                          R"({"recv": [2, 7], "send": [-2, -1]})", R"({"recv": [-2, -2], "send": [-2, -1]})"}) {
    j["p2p"]["tags"] = json::parse(bad);
    CHECK_THROWS_WITH_AS(j.get<RankEvidence>(), doctest::Contains("p2p.tags: "), std::invalid_argument);
  }
  j["p2p"]["tags"] = json::parse(R"({"recv": [2, 7], "send": [-2, -1]})");
  CHECK_THROWS_WITH_AS(j.get<RankEvidence>(), doctest::Contains("peer 1 has dirs 's' but receive tag 7"),
                       std::invalid_argument);
}
