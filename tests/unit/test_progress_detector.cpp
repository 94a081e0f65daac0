// Detector rules over gathered evidence: who is behind, who diverged, who
// died first; never a guess without a strict majority.
#include <doctest/doctest.h>

#include "libc3/rank_record.hpp"
#include "scoutd/detect/progress_detector.hpp"

using namespace scout::scoutd;
namespace c3 = scout::c3;

namespace {
std::vector<RankEvidence> job(int n, std::uint64_t seq, bool waiting, double stalled) {
  std::vector<RankEvidence> v;
  for (int r = 0; r < n; ++r) {
    RankEvidence e;
    e.rank = r;
    e.node = "n" + std::to_string(r / 2 + 1);
    e.pid = 100 + r;
    e.attached = true;
    e.seq = seq;
    e.fingerprint = 0xAAAA;
    e.comm_id = 0xC0;
    e.kind = scout::c3::kAllreduce;
    e.in_collective = waiting;
    e.stalled_s = stalled;
    e.state = 'S';
    v.push_back(e);
  }
  return v;
}
DetectorOptions opt() { return {.stall_threshold_s = 2.0}; }
}  // namespace

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
  for (auto& e : v) e.death_ns = 5'000'000'000;  // all at once (Ctrl-C)
  CHECK_FALSE(detect_crash(v, opt()).has_value());
  auto ok = job(8, 20, false, 0.0);
  for (auto& e : ok) { e.alive = false; e.finalized = true; e.death_ns = 1; }
  CHECK_FALSE(detect_crash(ok, opt()).has_value());  // clean exit
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
namespace {
// n ranks in a 1-D ring halo: each waits in MPI_Waitall for both neighbours.
std::vector<RankEvidence> ring(int n, double stalled) {
  auto v = job(n, 5, false, stalled);
  for (int r = 0; r < n; ++r) {
    v[r].p2p_call = "MPI_Waitall";
    v[r].p2p_peers = {(r + n - 1) % n, (r + 1) % n};
    v[r].p2p_wait_s = stalled;
    v[r].p2p_ops = 100;
  }
  return v;
}
void outside(RankEvidence& e, char state) {
  e.p2p_call.clear();
  e.p2p_peers.clear();
  e.state = state;
  e.state_s = e.stalled_s;
}
}  // namespace

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
  }
  // Ranks 2 and 3 wait in MPI_Recv for each other; the rest wait for them.
  v[2].p2p_call = v[3].p2p_call = "MPI_Recv";
  v[2].p2p_peers = {3};
  v[3].p2p_peers = {2};
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kDeadlock);
  CHECK(d[0].ranks == std::vector<int>{2, 3});
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
  // A fault after another rank had died: the job was being torn down.
  v[0].death_ns = 850;
  CHECK_FALSE(detect_crash(v, opt()));
  v[0].death_ns = 1000;
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

namespace {
// NCCL ranks: every host issued operation 11; the GPUs of all but `held`
// are inside it; the held GPU completed 10 and did not begin 11.
std::vector<RankEvidence> gpu_job(int n, int held, double gpu_idle) {
  auto v = job(n, 11, true, 5.0);
  for (auto& e : v) {
    e.gpu.present = true;
    e.gpu.tracking = true;
    e.gpu.bus_id = "0000:1" + std::to_string(e.rank) + ":00.0";
    e.gpu.device = e.rank;
    e.gpu.started = 11;
    e.gpu.done = 10;
    e.gpu.idle_s = 3.0;
  }
  v[held].gpu.started = 10;
  v[held].gpu.idle_s = gpu_idle;
  v[held].in_collective = false;
  return v;
}
}  // namespace

TEST_CASE("NCCL: a GPU that never began the operation the others' GPUs wait in is named (gpu_hang)") {
  auto v = gpu_job(4, 2, 4.0);
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kGpuHang);
  CHECK(d[0].status == c3::VerdictStatus::kAttributed);
  CHECK(d[0].ranks == std::vector<int>{2});
  CHECK(d[0].hosts == std::vector<std::string>{"n2"});
  CHECK(d[0].evidence["operation"] == 11);
  CHECK(d[0].evidence["culprits"][0]["gpu"]["bus_id"] == "0000:12:00.0");
  CHECK(d[0].evidence["waiting"] == nlohmann::json({0, 1, 3}));
}

TEST_CASE("NCCL: no gpu_hang while the held GPU is within the threshold, nor for a host that never issued") {
  auto v = gpu_job(4, 2, 0.5);  // its GPU completed something half a second ago
  for (auto& d : detect_progress(v, opt())) CHECK(d.kind != c3::VerdictKind::kGpuHang);
  v = gpu_job(4, 1, 4.0);
  v[1].seq = 10;  // the host stopped before issuing 11: a host stall, not the GPU
  v[1].state = 'T';
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kStall);
  CHECK(d[0].ranks == std::vector<int>{1});
  // Every GPU inside the same operation: nobody is named.
  v = gpu_job(4, 0, 4.0);
  v[0].gpu.started = 11;
  v[0].in_collective = true;
  for (auto& x : detect_progress(v, opt())) CHECK(x.status != c3::VerdictStatus::kAttributed);
}

TEST_CASE("NCCL GPU evidence survives the gather and refuses an impossible state") {
  auto v = gpu_job(2, 1, 4.0);
  nlohmann::json j = v[0];
  RankEvidence back = j.get<RankEvidence>();
  CHECK(back.gpu.present);
  CHECK(back.gpu.bus_id == "0000:10:00.0");
  CHECK(back.gpu.started == 11);
  j["gpu"]["done"] = 12;
  CHECK_THROWS(j.get<RankEvidence>());
}

TEST_CASE("NCCL: per communicator, a tensor-parallel group's stopped GPU is named while another group waits elsewhere") {
  // Ranks 0-2 and 3-5 are two tensor-parallel groups (A, B); every rank is
  // also on W. Rank 4's GPU stopped before B's operation 11: ranks 3 and 5
  // wait inside it; ranks 0-2 finished A's and wait inside W's operation 6.
  auto v = job(6, 40, true, 5.0);
  constexpr std::uint64_t A = 0xA, B = 0xB, W = 0x77;
  for (auto& e : v) {
    e.gpu.present = e.gpu.tracking = true;
    e.gpu.bus_id = "0000:1" + std::to_string(e.rank) + ":00.0";
    e.gpu.idle_s = 4.0;
    const bool first = e.rank < 3;
    e.gpu.comms = {{first ? A : B, 11, first ? 11u : 11u, first ? 11u : 10u}, {W, first ? 6u : 5u, first ? 6u : 5u, 5}};
    e.seq = first ? 30 : 29;          // global positions differ between the groups
    e.gpu.started = first ? 30 : 29;
    e.gpu.done = first ? 29 : 28;
  }
  v[4].gpu.comms[0] = {B, 11, 10, 10};  // issued B's 11, began nothing
  v[4].gpu.started = 28;
  v[4].in_collective = false;
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kGpuHang);
  CHECK(d[0].ranks == std::vector<int>{4});
  CHECK(d[0].evidence["communicator"] == "000000000000000b");
  CHECK(d[0].evidence["communicator_op"] == 11);
  CHECK(d[0].evidence["waiting"] == nlohmann::json({3, 5}));
  // The same picture with rank 4's GPU still working (it completed
  // something a moment ago): nobody is named a GPU hang.
  v[4].gpu.idle_s = 0.3;
  for (auto& x : detect_progress(v, opt())) CHECK(x.kind != c3::VerdictKind::kGpuHang);
}

// --- at scale: every rank waits for every other -----------------------------
// 20,000 ranks in an any-source receive (a master/worker or irregular code
// where every rank takes work from anyone) and one stopped rank: a graph of
// rank x rank edges would be 4 * 10^8 entries; through one node per group it
// is O(ranks). The verdict is a ledger row of kilobytes: culprits in full,
// the ranks around them bounded, with their counts.
TEST_CASE("20,000 ranks waiting for any source: the stopped one named, the evidence bounded") {
  const int n = 20000;
  auto v = job(n, 5, false, 3.0);
  for (auto& e : v) {
    e.p2p_call = "MPI_Recv";
    e.p2p_peers = {-1};
    e.p2p_any_comm = 0xC0;
    e.p2p_wait_s = 3.0;
  }
  outside(v[12345], 'T');
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kStall);
  CHECK(d[0].ranks == std::vector<int>{12345});
  CHECK(d[0].evidence["waiting_count"] == n - 1);
  CHECK(d[0].evidence["waiting"].size() == 64);
  CHECK(d[0].evidence["chain_count"] == n);
  REQUIRE(d[0].evidence["chain"].size() == 64);
  CHECK(d[0].evidence["chain"][0] == "rank 12345 is outside MPI, process stopped (T)");  // the culprit's line kept
  CHECK(d[0].evidence["waited_by_count"]["12345"] == n - 1);
  CHECK(d[0].evidence["waited_by"]["12345"].size() == 64);
  CHECK(d[0].evidence.dump().size() < 16384);
}

TEST_CASE("an any-source receive on a communicator of itself alone waits for nobody") {
  auto v = ring(5, 3.0);
  v[0].p2p_peers = {-1};
  v[0].p2p_any_comm = 0xD0;
  v[0].comm_members[0xD0] = {0};
  outside(v[3], 'T');
  auto d = detect_progress(v, opt());
  REQUIRE(!d.empty());
  // Rank 0 leads nowhere: it is a sink waiting itself (not a culprit), and
  // the others still lead to the stopped rank.
  CHECK(d[0].ranks == std::vector<int>{3});
}

TEST_CASE("100,000 ranks in a collective, one stopped behind: named, evidence bounded") {
  const int n = 100000;
  auto v = job(n, 4200, true, 12.0);
  v[77777].seq = 4199;
  v[77777].in_collective = false;
  v[77777].state = 'T';
  v[77777].state_s = 12.0;
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kStall);
  CHECK(d[0].ranks == std::vector<int>{77777});
  CHECK(d[0].evidence["waiting_count"] == n - 1);
  CHECK(d[0].evidence.dump().size() < 16384);
}

TEST_CASE("12,500 tensor-parallel groups of GPUs, one GPU stopped: named through its group") {
  const int n = 100000;
  auto v = job(n, 900, false, 5.0);
  for (int r = 0; r < n; ++r) {
    auto& e = v[r];
    e.gpu.present = e.gpu.tracking = true;
    e.seq = 900;
    e.gpu.done = 899;
    e.gpu.started = 900;  // inside operation 900
    RankEvidence::Gpu::CommOps c;
    c.id = 0x1000 + static_cast<std::uint64_t>(r / 8);
    c.issued = 50;
    c.begun = 50;
    c.done = 49;
    e.gpu.comms.push_back(c);
  }
  auto& bad = v[40003];
  bad.gpu.started = bad.gpu.done = 899;  // issued 900, began none
  bad.gpu.idle_s = 5.0;
  bad.gpu.comms[0].begun = bad.gpu.comms[0].done = 48;
  auto d = detect_progress(v, opt());
  REQUIRE(d.size() == 1);
  CHECK(d[0].kind == c3::VerdictKind::kGpuHang);
  CHECK(d[0].ranks == std::vector<int>{40003});
  CHECK(d[0].evidence.dump().size() < 16384);
}
