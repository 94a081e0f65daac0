// Ranks left waiting for ranks that have gone (finalized peers of a
// point-to-point wait or of a collective) or for themselves.
#include <doctest/doctest.h>

#include <algorithm>

#include "libc3/rank_record.hpp"
#include "libc3/signature.hpp"
#include "scoutd/detect/progress_detector.hpp"
#include "tests/unit/progress_test_util.hpp"

using namespace scout::scoutd;
using namespace progress_test;
namespace c3 = scout::c3;

TEST_CASE("a rank waiting for peers that have all finalized is a hang, even alone") {
  auto v = job(2, 500, false, 3.0);
  v[0].p2p_call = "MPI_Recv";
  v[0].p2p_peers = {1};
  outside(v[1], 'S');
  v[1].finalized = true;
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kHang);
  CHECK(d[0].status == c3::VerdictStatus::kAttributed);
  CHECK(d[0].ranks == std::vector<int>{0});
  CHECK(d[0].evidence["finalized"] == nlohmann::json::array({1}));
  // Any source: not told (a gather decided with a quorum may miss a rank
  // that could still send), even with every rank seen finalized.
  auto w = job(3, 500, false, 3.0);
  w[0].p2p_call = "MPI_Recv";
  w[0].p2p_peers = {-1};
  for (int r : {1, 2}) {
    outside(w[r], 'S');
    w[r].finalized = true;
  }
  auto none = detect_progress(w, opt());
  CHECK(std::none_of(none.begin(), none.end(), [](auto& x) { return x.key.rfind("hang-left", 0) == 0; }));
  // Under the threshold, or waiting for more peers than listed: not yet.
  v[0].stalled_s = 1.0;
  CHECK(detect_progress(v, opt()).empty());
  v[0].stalled_s = 3.0;
  v[0].p2p_more = true;
  CHECK(detect_progress(v, opt()).empty());
}

TEST_CASE("ranks waiting in a collective that a member left by finalizing: those that left are named") {
  // Rank 1 of two skipped the last collective and finalized; rank 0 waits
  // in it on the world (members listed): no majority, and still named.
  auto v = job(2, 21, true, 3.0);
  for (auto& e : v) e.comm_members[0xC0] = {0, 1};
  outside(v[1], 'S');
  v[1].finalized = true;
  // It finalized at the collective the other is in (it took its part, as a
  // Bcast's root does, and left): not blamed.
  auto d = detect_progress(v, opt());
  CHECK(std::none_of(d.begin(), d.end(), [](auto& x) { return x.key.rfind("hang-left-collective", 0) == 0; }));
  v[1].seq = 20;  // behind it: it skipped the collective
  d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kHang);
  CHECK(d[0].status == c3::VerdictStatus::kAttributed);
  CHECK(d[0].ranks == std::vector<int>{1});
  CHECK(d[0].evidence["finalized"] == nlohmann::json::array({1}));
  CHECK(d[0].key.rfind("hang-left-collective", 0) == 0);
  // A world too large to list its members: its identity says who belongs.
  auto w = job(4, 21, true, 3.0);
  for (auto& e : w) e.comm_id = c3::mpi_world_identity(4);
  outside(w[3], 'S');
  w[3].finalized = true;
  w[3].seq = 20;
  d = detect_progress(w, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].ranks == std::vector<int>{3});
  // A communicator the finalized rank is not a member of: not this rule.
  for (auto& e : v) e.comm_members[0xC0] = {0, 2};
  d = detect_progress(v, opt());
  CHECK(std::none_of(d.begin(), d.end(), [](auto& x) { return x.key.rfind("hang-left-collective", 0) == 0; }));
  // A waiter that is stopped is its own stall, not this rule's.
  for (auto& e : v) e.comm_members[0xC0] = {0, 1};
  v[0].state = 'T';
  d = detect_progress(v, opt());
  CHECK(std::none_of(d.begin(), d.end(), [](auto& x) { return x.key.rfind("hang-left-collective", 0) == 0; }));
  v[0].state = 'S';
  // Under the threshold: not yet.
  v[0].stalled_s = 1.0;
  CHECK(detect_progress(v, opt()).empty());
}

TEST_CASE("a rank blocked sending to itself, or receiving from itself, is a deadlock of one rank") {
  auto v = job(3, 21, true, 3.0);
  v[0].in_collective = false;
  v[0].p2p_call = "MPI_Ssend";
  v[0].p2p_peers = {0};
  v[0].p2p_wait_s = 3.0;
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kDeadlock);
  CHECK(d[0].ranks == std::vector<int>{0});
  CHECK(d[0].evidence["mismatch"].get<std::string>().find("sends to itself") != std::string::npos);
  v[0].p2p_call = "MPI_Recv";
  d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].evidence["mismatch"].get<std::string>().find("receive from itself") != std::string::npos);
  // A threaded rank (another thread may send) or a stopped one: not this rule.
  v[0].threaded = true;
  d = detect_progress(v, opt());
  CHECK(std::none_of(d.begin(), d.end(), [](auto& x) { return x.key.rfind("deadlock-self", 0) == 0; }));
  v[0].threaded = false;
  // A wait on requests to itself may be a send and its receive: not this rule.
  v[0].p2p_call = "MPI_Waitall";
  d = detect_progress(v, opt());
  CHECK(std::none_of(d.begin(), d.end(), [](auto& x) { return x.key.rfind("deadlock-self", 0) == 0; }));
  // Under the threshold: not yet.
  v[0].p2p_call = "MPI_Ssend";
  v[0].p2p_wait_s = 1.0;
  d = detect_progress(v, opt());
  CHECK(std::none_of(d.begin(), d.end(), [](auto& x) { return x.key.rfind("deadlock-self", 0) == 0; }));
}
