// Detector rules over gathered evidence: who is behind, who diverged, who
// died first; never a guess without a strict majority.
#include <doctest/doctest.h>

#include "libc3/rank_record.hpp"
#include "scoutd/detect/progress_detector.hpp"
#include "tests/unit/progress_test_util.hpp"

using namespace scout::scoutd;
using namespace progress_test;
namespace c3 = scout::c3;

TEST_CASE("stopped rank behind the majority: stall naming it, host and pid") {
  auto v = job(8, 41, true, 3.0);
  v[5].seq = 40;
  v[5].in_collective = false;
  v[5].state = 'T';
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kStall);
  CHECK(d[0].status == c3::VerdictStatus::kAttributed);
  CHECK(d[0].ranks == std::vector<int>{5});
  CHECK(d[0].hosts == std::vector<std::string>{"n3"});
  CHECK(d[0].evidence["culprits"][0]["pid"] == 105);
  CHECK(d[0].evidence["waiting"].size() == 7);
}

TEST_CASE("running rank behind the majority: hang") {
  auto v = job(4, 10, true, 3.0);
  v[2].seq = 9;
  v[2].in_collective = false;
  v[2].state = 'R';
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kHang);
  CHECK(d[0].ranks == std::vector<int>{2});
}

// A stopped rank that is continued runs behind the others for a moment
// before it catches up: a gather then must not open a second incident.
TEST_CASE("a stopped rank continued but not caught up yet: the same incident as its stall") {
  auto v = job(8, 41, true, 3.0);
  v[5].seq = 40;
  v[5].in_collective = false;
  v[5].state = 'T';
  auto stopped = detect_progress(v, opt());
  v[5].state = 'R';  // SIGCONT: running, still behind
  auto running = detect_progress(v, opt());
  REQUIRE(stopped.size() == 1);
  REQUIRE(running.size() == 1);
  CHECK(stopped[0].kind == c3::VerdictKind::kStall);
  CHECK(running[0].kind == c3::VerdictKind::kHang);
  CHECK(running[0].key == stopped[0].key);
  // Behind somewhere else: another incident.
  v[5].seq = 39;
  CHECK(detect_progress(v, opt())[0].key != stopped[0].key);
}

TEST_CASE("below the stall threshold or nobody waiting: no verdict") {
  auto v = job(4, 10, true, 1.0);
  v[2].seq = 9;
  CHECK(detect_progress(v, opt()).empty());
  auto c = job(4, 10, false, 30.0);  // long compute phase everywhere
  CHECK(detect_progress(c, opt()).empty());
}

TEST_CASE("same position, different fingerprint: divergence by strict majority") {
  auto v = job(8, 41, true, 3.0);
  v[3].fingerprint = 0xBBBB;
  v[3].kind = scout::c3::kBarrier;
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kDivergence);
  CHECK(d[0].status == c3::VerdictStatus::kAttributed);
  CHECK(d[0].ranks == std::vector<int>{3});
  CHECK(d[0].evidence["culprits"][0]["collective"] == "barrier");
  CHECK(d[0].evidence["majority_collective"] == "allreduce");
}

TEST_CASE("everyone waits in the same collective: inconclusive communication hang") {
  auto d = detect_progress(job(4, 7, true, 5.0), opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kHang);
  CHECK(d[0].status == c3::VerdictStatus::kInconclusive);
  CHECK(d[0].ranks.empty());
  CHECK(d[0].evidence["members"].size() == 4);
}

TEST_CASE("split positions without a strict majority: inconclusive, no culprit") {
  auto v = job(4, 7, true, 5.0);
  v[0].seq = v[1].seq = 6;
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].status == c3::VerdictStatus::kInconclusive);
  CHECK(d[0].ranks.empty());
}

TEST_CASE("crash: the first death of a minority is attributed; a job-wide teardown is not") {
  auto v = job(8, 20, true, 0.5);
  v[4].alive = false;
  v[4].death_ns = 1'000'000'000;
  v[4].dead_s = 3.0;
  v[4].state = 'X';
  for (int r : {0, 1, 2, 3, 5, 6, 7}) {  // mpirun kills the rest a second later
    v[static_cast<std::size_t>(r)].alive = false;
    v[static_cast<std::size_t>(r)].death_ns = 2'000'000'000;
    v[static_cast<std::size_t>(r)].dead_s = 2.0;
  }
  bool pending = false;
  auto d = detect_crash(v, opt(), &pending);
  CHECK_FALSE(pending);
  REQUIRE(d.has_value());
  CHECK(d->kind == c3::VerdictKind::kCrash);
  CHECK(d->ranks == std::vector<int>{4});
  CHECK(d->hosts == std::vector<std::string>{"n3"});
  for (auto& e : v) {  // all at once (Ctrl-C)
    e.death_ns = 5'000'000'000;
    e.dead_s = 2.0;
  }
  CHECK_FALSE(detect_crash(v, opt()).has_value());
  auto ok = job(8, 20, false, 0.0);
  for (auto& e : ok) { e.alive = false; e.finalized = true; e.death_ns = 1; }
  CHECK_FALSE(detect_crash(ok, opt()).has_value());  // clean exit
}

TEST_CASE("crash: deaths after the launcher said it stops the job are no crash, whoever goes first") {
  auto v = job(4, 20, true, 0.5);
  v[3].alive = false;
  v[3].death_ns = 1'000'000'000;  // a second before the others
  v[3].dead_s = 2.0;
  v[3].end_kind = "signal";  // even a fault while the job is torn down
  v[3].end_ns = 1'000'000'000;
  v[3].end_code = 11;
  CHECK(detect_crash(v, opt()).has_value());
  v[3].died_on_stop = true;
  CHECK(detect_crash(v, opt()).has_value());  // its fault came before the stop: still named
  v[3].ended_on_stop = true;
  CHECK_FALSE(detect_crash(v, opt()).has_value());
  v[3].end_kind = "abort";  // a program that calls MPI_Abort on the stop's SIGINT
  CHECK_FALSE(detect_crash(v, opt()).has_value());
  v[3].end_kind.clear();
  CHECK_FALSE(detect_crash(v, opt()).has_value());
  v[1].alive = false;  // a death before the stop is still named
  v[1].death_ns = 500'000'000;
  v[1].dead_s = 2.5;
  auto d = detect_crash(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->ranks == std::vector<int>{1});
  nlohmann::json j = v[3];
  CHECK(j.at("died_on_stop") == true);
  CHECK(j.get<RankEvidence>().died_on_stop);
  j["died_on_stop"] = "yes";
  CHECK_THROWS_WITH_AS(j.get<RankEvidence>(), doctest::Contains("died_on_stop: expected true or false"),
                       std::invalid_argument);
}

TEST_CASE("crash: a death without a fatal signal waits until its peers outlived it (a teardown stops first)") {
  auto v = job(3, 20, true, 0.5);
  v[1].alive = false;
  v[1].death_ns = 1'000'000'000;
  v[1].dead_s = 0.3;  // SIGKILLed 0.3 s ago: Slurm may be killing the others right now
  v[1].state = 'X';
  bool pending = false;
  CHECK_FALSE(detect_crash(v, opt(), &pending).has_value());
  CHECK(pending);
  v[1].dead_s = 2.5;  // the others lived on
  pending = false;
  auto d = detect_crash(v, opt(), &pending);
  CHECK_FALSE(pending);
  REQUIRE(d.has_value());
  CHECK(d->ranks == std::vector<int>{1});
}

TEST_CASE("evidence round-trips through JSON") {
  auto v = job(1, 3, true, 1.5)[0];
  v.fingerprint = 0xFFFFFFFFFFFFFFFFULL;
  nlohmann::json j = v;
  auto back = j.get<RankEvidence>();
  CHECK(back.fingerprint == v.fingerprint);
  CHECK(back.seq == 3);
  CHECK(back.node == "n1");
}

TEST_CASE("the rank behind blocked inside a write is an I/O straggler") {
  auto v = job(8, 41, true, 3.0);
  v[6].seq = 40;
  v[6].in_collective = false;
  v[6].state = 'S';
  v[6].syscall = 1;  // write
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kStraggler);
  CHECK(d[0].evidence["type"] == "io");
  CHECK(d[0].ranks == std::vector<int>{6});
  CHECK(d[0].evidence["culprits"][0]["syscall"] == "write");
  v[6].state = 'D';  // uninterruptible, but not in a read/write: a stall
  v[6].syscall = -1;
  CHECK(detect_progress(v, opt())[0].kind == c3::VerdictKind::kStall);
}

// --- point-to-point: the wait-for graph, direct evidence, end events --------

TEST_CASE("wait-for graph: the waiting ranks lead to the stopped one (stall, with the chain)") {
  auto v = ring(6, 3.0);
  outside(v[3], 'T');
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kStall);
  CHECK(d[0].ranks == std::vector<int>{3});
  CHECK(d[0].evidence["rule"].get<std::string>().find("wait-for graph") != std::string::npos);
  const auto chain = d[0].evidence["chain"].dump();
  CHECK(chain.find("rank 2 waits in MPI_Waitall for 1 and 3 (3.0 s)") != std::string::npos);
  CHECK(chain.find("rank 3 is outside MPI, process stopped (T)") != std::string::npos);
  CHECK(d[0].evidence["waited_by"]["3"] == nlohmann::json({2, 4}));
  // A running rank at the sink is a hang; the key follows the incident.
  outside(v[3], 'R');
  v[3].state_s = 0;
  d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kHang);
  CHECK(d[0].ranks == std::vector<int>{3});
}

TEST_CASE("wait-for graph: healthy progress, or waits shorter than the threshold, name nobody") {
  auto v = ring(6, 0.5);
  outside(v[3], 'R');
  CHECK(detect_progress(v, opt()).empty());
}

TEST_CASE("wait-for graph: a cycle with no rank outside MPI is a deadlock naming the cycle") {
  auto v = ring(6, 3.0);
  {
    // Everyone in Waitall for both neighbours and nobody outside MPI: the
    // requests may be satisfied already, so nobody is named.
    auto all = detect_progress(v, opt());
    REQUIRE(all.size() == 1);
    CHECK(all[0].kind == c3::VerdictKind::kHang);
    CHECK(all[0].status == c3::VerdictStatus::kInconclusive);
    // A ring of blocking sends, each waiting for its right neighbour: deadlock.
    auto b = v;
    for (int r = 0; r < 6; ++r) {
      b[r].p2p_call = "MPI_Send";
      b[r].p2p_peers = {(r + 1) % 6};
    }
    all = detect_progress(b, opt());
    REQUIRE(all.size() == 1);
    CHECK(all[0].kind == c3::VerdictKind::kDeadlock);
    CHECK(all[0].ranks.size() == 6);
    CHECK(all[0].evidence["mismatch"].get<std::string>().find("(both sides sending") != std::string::npos);
    // Each in MPI_Wait on one request: a request's direction is not
    // recorded (a send and its receive stuck on a link look the same), so
    // the whole job in one cycle is not told.
    for (auto& e : b) e.p2p_call = "MPI_Wait";
    CHECK(detect_progress(b, opt())[0].status == c3::VerdictStatus::kInconclusive);
    // Unless the probe recorded which way the requests go (record version
    // 9): a wait for a send each is a deadlock of sends, a wait for a
    // receive each a deadlock of receives; one rank whose requests go both
    // ways (or unknown) leaves it a possible stuck transfer.
    for (auto& e : b) e.p2p_dirs = "s";
    all = detect_progress(b, opt());
    REQUIRE(all.size() == 1);
    CHECK(all[0].kind == c3::VerdictKind::kDeadlock);
    CHECK(all[0].ranks.size() == 6);
    CHECK(all[0].evidence["mismatch"].get<std::string>().find("(both sides sending") != std::string::npos);
    for (auto& e : b) e.p2p_dirs = "r";
    all = detect_progress(b, opt());
    REQUIRE(all.size() == 1);
    CHECK(all[0].kind == c3::VerdictKind::kDeadlock);
    CHECK(all[0].evidence["mismatch"] == "each rank waits to receive from the next before it sends (both sides receiving)");
    b[3].p2p_dirs = "b";
    CHECK(detect_progress(b, opt())[0].status == c3::VerdictStatus::kInconclusive);
    b[3].p2p_dirs = "";
    CHECK(detect_progress(b, opt())[0].status == c3::VerdictStatus::kInconclusive);
    // A wait for receives from two peers, the second unknown: unknown.
    b[3].p2p_peers = {4, 2};
    b[3].p2p_dirs = "r?";
    CHECK(detect_progress(b, opt())[0].status == c3::VerdictStatus::kInconclusive);
    // A loop of MPI_Test runs the program between its calls: unknown.
    b[3].p2p_peers = {4};
    b[3].p2p_dirs = "r";
    b[3].p2p_call = "MPI_Test";
    CHECK(detect_progress(b, opt())[0].status == c3::VerdictStatus::kInconclusive);
    // A blocking send and the receive from its sender, stuck: a transfer
    // that does not complete (or tags that do not match), not a deadlock.
    auto t = job(2, 5, false, 3.0);
    t[0].p2p_call = "MPI_Send";
    t[0].p2p_peers = {1};
    t[1].p2p_call = "MPI_Recv";
    t[1].p2p_peers = {0};
    all = detect_progress(t, opt());
    REQUIRE(all.size() == 1);
    CHECK(all[0].kind == c3::VerdictKind::kHang);
    CHECK(all[0].status == c3::VerdictStatus::kInconclusive);
    CHECK(all[0].key.rfind("hang-transfer", 0) == 0);
    // The same tag, or a receive of any tag: still a transfer that does not
    // complete. Another tag, or another communicator: no receive matches
    // the send, a deadlock of the two, said with the tags.
    t[0].p2p_tag = 1;
    CHECK(detect_progress(t, opt())[0].key.rfind("hang-transfer", 0) == 0);
    t[1].p2p_tag = 1;
    CHECK(detect_progress(t, opt())[0].key.rfind("hang-transfer", 0) == 0);
    t[1].p2p_tag = 2;
    all = detect_progress(t, opt());
    REQUIRE(all.size() == 1);
    CHECK(all[0].kind == c3::VerdictKind::kDeadlock);
    CHECK(all[0].ranks == std::vector<int>{0, 1});
    CHECK(all[0].evidence["mismatch"] == "no receive matches the send (tag 1 sent, tag 2 awaited)");
    t[1].p2p_tag = 1;
    t[0].p2p_comm = 0xD1;
    t[1].p2p_comm = 0xC0;
    // An intercommunicator's two sides have different identities and no
    // published members: still a stuck transfer.
    CHECK(detect_progress(t, opt())[0].key.rfind("hang-transfer", 0) == 0);
    t[0].comm_members[0xD1] = {0, 1};
    t[1].comm_members[0xC0] = {0, 1};
    all = detect_progress(t, opt());
    CHECK(all[0].kind == c3::VerdictKind::kDeadlock);
    CHECK(all[0].evidence["mismatch"] ==
          "no receive matches the send (sent on another communicator than the receive waits on)");
    // The receive through a request (MPI_Irecv, then MPI_Wait), its tag
    // the request's: the same two facts.
    t[0].p2p_comm = t[1].p2p_comm = 0xC0;
    t[1].p2p_call = "MPI_Wait";
    t[1].p2p_tag = 2;
    CHECK(detect_progress(t, opt())[0].status == c3::VerdictStatus::kInconclusive);  // direction unknown
    t[1].p2p_dirs = "r";
    all = detect_progress(t, opt());
    REQUIRE(all.size() == 1);
    CHECK(all[0].kind == c3::VerdictKind::kDeadlock);
    CHECK(all[0].evidence["mismatch"] == "no receive matches the send (tag 1 sent, tag 2 awaited)");
    t[1].p2p_tag = 1;
    CHECK(detect_progress(t, opt())[0].key.rfind("hang-transfer", 0) == 0);
  }
  // Ranks 2 and 3 wait in MPI_Recv for each other; the rest wait for them.
  v[2].p2p_call = v[3].p2p_call = "MPI_Recv";
  v[2].p2p_peers = {3};
  v[3].p2p_peers = {2};
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kDeadlock);
  CHECK(d[0].ranks == std::vector<int>{2, 3});
  CHECK(d[0].evidence["mismatch"] == "each rank waits to receive from the next before it sends (both sides receiving)");
  CHECK_FALSE(c3::drainable(d[0].kind));  // an application bug never drains a node
}

TEST_CASE("wait-for graph: any-source waits reaching everyone are inconclusive") {
  auto v = ring(4, 3.0);
  for (auto& e : v) e.p2p_peers = {-1};  // any source of an unknown communicator: everyone
  outside(v[1], 'R');
  outside(v[2], 'R');  // two of four outside MPI: not a strict minority
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].status == c3::VerdictStatus::kInconclusive);
}

TEST_CASE("direct evidence: a stopped process is a stall without any majority (1 and 2 ranks)") {
  auto v = job(1, 7, false, 3.0);
  outside(v[0], 'T');
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kStall);
  CHECK(d[0].ranks == std::vector<int>{0});
  v = job(2, 7, true, 3.0);
  outside(v[1], 'T');
  v[1].seq = 6;
  d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kStall);
  CHECK(d[0].ranks == std::vector<int>{1});
  // Stopped for less than the threshold (state sampled since): nobody named
  // yet (two ranks at different positions: no majority, inconclusive).
  v[1].state_s = 1.0;
  for (auto& x : detect_progress(v, opt())) CHECK(x.status == c3::VerdictStatus::kInconclusive);
}

TEST_CASE("end events: MPI_Abort names its caller even when every rank died at once") {
  auto v = job(4, 9, false, 0.1);
  for (auto& e : v) {
    e.alive = false;
    e.death_ns = 1000;
    e.dead_s = 1.0;
  }
  v[2].end_kind = "abort";
  v[2].end_code = 3;
  v[2].end_ns = 900;
  auto d = detect_crash(v, opt());
  REQUIRE(d);
  CHECK(d->kind == c3::VerdictKind::kAbort);
  CHECK(d->ranks == std::vector<int>{2});
  CHECK(d->evidence["summary"] == "rank 2 called MPI_Abort with error code 3");
  CHECK_FALSE(c3::drainable(d->kind));
  // An MPI call failing under MPI_ERRORS_ARE_FATAL: the application's end too.
  v[2].end_kind = "mpi_error";
  v[2].end_code = 6;
  v[2].end_addr = 6;
  v[2].end_call = "MPI_Send";
  d = detect_crash(v, opt());
  REQUIRE(d);
  CHECK(d->kind == c3::VerdictKind::kAbort);
  CHECK(d->ranks == std::vector<int>{2});
  CHECK(d->evidence["summary"] == "rank 2: MPI_Send failed with MPI_ERR_RANK (MPI_ERRORS_ARE_FATAL)");
  CHECK(d->evidence["culprits"][0]["error_class"] == "MPI_ERR_RANK");
  nlohmann::json j = v[2];
  CHECK(j.get<RankEvidence>().end_call == "MPI_Send");
  j["end"]["addr"] = "ff";
  CHECK_THROWS_AS(j.get<RankEvidence>(), std::invalid_argument);
  v[2].end_addr = 0;  // a class of the library's own
  d = detect_crash(v, opt());
  REQUIRE(d);
  CHECK(d->evidence["summary"] == "rank 2: MPI_Send failed with error class 6 (MPI_ERRORS_ARE_FATAL)");
  v[2].end_call.clear();
  // A fatal signal in one rank first: crash, with the signal and the address.
  v[2].end_kind = "signal";
  v[2].end_code = 11;
  v[2].end_addr = 0x40;
  d = detect_crash(v, opt());
  REQUIRE(d);
  CHECK(d->kind == c3::VerdictKind::kCrash);
  CHECK(d->evidence["summary"] == "rank 2 got SIGSEGV at address 0x40");
  // Still running its handler: not yet (the launcher has not had its say).
  v[2].alive = true;
  v[2].death_ns = 0;
  CHECK_FALSE(detect_crash(v, opt()));
  v[2].alive = false;
  v[2].death_ns = 1000;
  // A fault after another rank had died: the job was being torn down (rank
  // 0 is on another node: by the ages its observer gave).
  v[0].death_ns = 850;
  v[0].dead_s = 1.0 + 150e-9;  // 150 ns before the others, 50 ns before rank 2's fault
  CHECK_FALSE(detect_crash(v, opt()));
  v[0].death_ns = 1000;
  v[0].dead_s = 1.0;
  // The same signal in every rank at once is the program's: no rank named.
  for (auto& e : v) {
    e.end_kind = "signal";
    e.end_code = 11;
    e.end_ns = 900;
  }
  CHECK_FALSE(detect_crash(v, opt()));
}

TEST_CASE("a rank stopped inside MPI_Recv is a sink, not half of a deadlock") {
  // Ping-pong: rank 0 waits for 1's reply; rank 1 was stopped inside its Recv.
  auto v = job(2, 3, false, 3.0);
  v[0].p2p_call = v[1].p2p_call = "MPI_Recv";
  v[0].p2p_peers = {1};
  v[1].p2p_peers = {0};
  v[1].state = 'T';
  v[1].state_s = 3.0;
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kStall);
  CHECK(d[0].ranks == std::vector<int>{1});
  CHECK(d[0].evidence["chain"].dump().find("rank 1 is inside MPI_Recv, process stopped (T)") != std::string::npos);
  // Four ranks: three wait for the stopped one through the graph.
  auto w = ring(4, 3.0);
  w[2].state = 'T';
  w[2].state_s = 3.0;
  d = detect_progress(w, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kStall);
  CHECK(d[0].ranks == std::vector<int>{2});
}
