// The per-communicator rule for threaded programs (record version 8):
// rule_threads.cpp, through detect_progress as the round runs it.
#include <doctest/doctest.h>

#include "libc3/rank_record.hpp"
#include "scoutd/detect/progress_detector.hpp"
#include "tests/unit/progress_test_util.hpp"

using namespace scout::scoutd;
using namespace progress_test;

namespace {
constexpr std::uint64_t kCommA = 0xA0, kCommB = 0xB0;

// n threaded ranks, two threads each: thread 0 calls collectives on A,
// thread 1 on B. Every rank keeps moving (B's collectives), so no rank is
// stalled; on A, every rank but `behind` waits inside collective k for
// `waited` seconds, and `behind` has entered k - 1 only.
std::vector<RankEvidence> threaded(int n, int behind, std::uint64_t k, double waited) {
  auto v = job(n, 1000, false, 0.01);
  for (auto& e : v) {
    e.threaded = true;
    e.comm_members[kCommA] = {};
    for (int r = 0; r < n; ++r) e.comm_members[kCommA].push_back(r);
    const bool b = e.rank == behind;
    e.comm_progress.push_back({kCommA, b ? k - 1 : k, k - 1, 0xF00D, c3::kAllreduce, b ? waited + 3 : waited});
    e.comm_progress.push_back({kCommB, 900, 900, 0xBEEF, c3::kAllreduce, 0.001});
    RankEvidence::Thread t0, t1;
    t0.tid = 1000 + e.rank * 10;
    if (!b) {
      t0.coll_kind = c3::kAllreduce;
      t0.coll_comm = kCommA;
      t0.coll_ordinal = k;
      t0.coll_s = waited;
    }
    t1.tid = t0.tid + 1;
    e.threads = {t0, t1};
  }
  return v;
}
}  // namespace

TEST_CASE("threads: one thread that never enters its communicator's collective is named hang while the rank moves") {
  auto v = threaded(4, 2, 301, 3.0);
  auto out = detect_progress(v, opt());
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == scout::c3::VerdictKind::kHang);
  CHECK(out[0].status == scout::c3::VerdictStatus::kAttributed);
  CHECK(out[0].ranks == std::vector<int>{2});
  CHECK(out[0].hosts == std::vector<std::string>{"n2"});
  CHECK(out[0].evidence["communicator"] == "00000000000000a0");
  CHECK(out[0].evidence["communicator_collective"] == 301);
  CHECK(out[0].evidence["collective"] == "allreduce");
  CHECK(out[0].evidence["majority_count"] == 3);
  auto& culprit = out[0].evidence["culprits"][0];
  CHECK(culprit["communicator_entered"] == 300);
  CHECK(culprit["threads"][0] == "thread 1020 is outside MPI");
  const std::string lines = out[0].evidence["threads"].dump();
  CHECK(lines.find("rank 0: thread 1000 waits in allreduce (collective 301 of communicator 00000000000000a0") !=
        std::string::npos);
}

TEST_CASE("threads: a member that never called a collective on the communicator is behind too") {
  auto v = threaded(3, 1, 1, 3.0);
  v[1].comm_progress.erase(v[1].comm_progress.begin());  // no entry for A: it never entered one
  auto out = detect_progress(v, opt());
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == scout::c3::VerdictKind::kHang);
  CHECK(out[0].ranks == std::vector<int>{1});
}

TEST_CASE("threads: under the threshold, without a strict majority, or everyone inside: no verdict") {
  CHECK(detect_progress(threaded(4, 2, 301, 1.0), opt()).empty());  // waited 1 s of 2
  auto v = threaded(4, 2, 301, 3.0);
  v[1].comm_progress[0].entered = 300;  // two of four behind: no strict majority inside
  v[1].threads[0].coll_kind = 0;
  CHECK(detect_progress(v, opt()).empty());
  auto w = threaded(4, -1, 301, 3.0);   // all inside 301: a communication hang the rank rules judge
  CHECK(detect_progress(w, opt()).empty());
  auto y = threaded(4, 2, 301, 3.0);
  y[3].comm_progress[0].since_s = 0.5;  // one member arrived just now: next gather
  CHECK(detect_progress(y, opt()).empty());
  auto h = threaded(4, 2, 301, 3.0);    // healthy: A completed everywhere
  for (auto& e : h) e.comm_progress[0] = {kCommA, 301, 301, 0xF00D, c3::kAllreduce, 3.0};
  CHECK(detect_progress(h, opt()).empty());
}

TEST_CASE("threads: a stopped process behind is left to the stall rule") {
  auto v = threaded(4, 2, 301, 3.0);
  v[2].state = 'T';
  v[2].state_s = 5;
  v[2].stalled_s = 5;
  auto out = detect_progress(v, opt());
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == scout::c3::VerdictKind::kStall);
  CHECK(out[0].ranks == std::vector<int>{2});
}

TEST_CASE("threads: inside the same collective with another fingerprint is a divergence on that communicator") {
  auto v = threaded(4, -1, 12, 3.0);
  v[3].comm_progress[0].fingerprint = 0xD1FF;
  v[3].comm_progress[0].kind = c3::kAllgather;
  auto out = detect_progress(v, opt());
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == scout::c3::VerdictKind::kDivergence);
  CHECK(out[0].ranks == std::vector<int>{3});
  CHECK(out[0].evidence["communicator_collective"] == 12);
}

TEST_CASE("threads: the threaded part of a rank's evidence round-trips through JSON; a peer's bad values are refused") {
  auto v = threaded(2, 1, 7, 3.0);
  v[0].threads[1].p2p_call = "MPI_Recv";
  v[0].threads[1].p2p_peers = {1};
  v[0].threads[1].p2p_wait_s = 0.5;
  v[0].threads_full = 2;
  nlohmann::json j = v[0];
  RankEvidence back = j.get<RankEvidence>();
  CHECK(back.threaded);
  CHECK(back.threads_full == 2);
  REQUIRE(back.comm_progress.size() == 2);
  CHECK(back.comm_progress[0].id == kCommA);
  CHECK(back.comm_progress[0].entered == 7);
  CHECK(back.comm_progress[0].since_s == doctest::Approx(3.0));
  REQUIRE(back.threads.size() == 2);
  CHECK(back.threads[0].coll_ordinal == 7);
  CHECK(back.threads[1].p2p_call == "MPI_Recv");
  CHECK(back.threads[1].p2p_peers == std::vector<int>{1});
  CHECK(back.comm_members.count(kCommA) == 1);  // its members travel with it
  auto bad = j;
  bad["threads"]["comms"][0][2] = 9;  // completed 9 of 7 entered
  CHECK_THROWS(bad.get<RankEvidence>());
  bad = j;
  bad["threads"]["comms"][0][5] = -1.0;
  CHECK_THROWS(bad.get<RankEvidence>());
  bad = j;
  for (int i = 0; i < 40; ++i) bad["threads"]["comms"].push_back(j["threads"]["comms"][0]);
  CHECK_THROWS(bad.get<RankEvidence>());
}

TEST_CASE("threads: a started nonblocking collective overlapped with compute is no wait") {
  auto v = threaded(4, 2, 301, 3.0);
  for (auto& e : v) e.threads[0].coll_kind = 0;  // no thread is inside it: the requests are pending
  CHECK(detect_progress(v, opt()).empty());
}

TEST_CASE("threads: membership comes from a rank's own evidence, and a full table knows nothing") {
  auto v = threaded(4, 2, 301, 3.0);
  // Rank 2 never entered A and its own record does not list A: the others'
  // lists of A's members do not make it one.
  v[2].comm_progress.erase(v[2].comm_progress.begin());
  v[2].comm_members.erase(kCommA);
  CHECK(detect_progress(v, opt()).empty());
  auto w = threaded(4, 2, 301, 3.0);
  w[2].comm_progress.erase(w[2].comm_progress.begin());
  w[2].comm_members.erase(kCommA);
  w[2].comm_members[kCommA] = {0, 1, 2, 3};  // its own record lists A: a member, never entered
  auto out = detect_progress(w, opt());
  REQUIRE(out.size() == 1);
  CHECK(out[0].ranks == std::vector<int>{2});
  w[2].comms_full = 5;  // ... unless its table was full: then where it is is unknown
  CHECK(detect_progress(w, opt()).empty());
}
