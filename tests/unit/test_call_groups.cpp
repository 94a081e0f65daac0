// Which rank is in which call, and where (call_groups.hpp): the groups of a
// divergence by collective, the kind of mismatch in words, the call sites
// from the stack classes, the sentence; bounded, and honest about a stack
// that is missing.
#include <doctest/doctest.h>

#include "libc3/rank_record.hpp"
#include "scoutd/detect/call_groups.hpp"
#include "scoutd/detect/stack_classes.hpp"

using namespace scout::scoutd;
using nlohmann::json;

namespace {
// Rank r waiting in collective `kind` on `comm` with fingerprint `fp`.
RankEvidence at(int r, std::uint32_t kind, std::uint64_t comm, std::uint64_t fp) {
  RankEvidence e;
  e.rank = r;
  e.kind = kind;
  e.comm_id = comm;
  e.fingerprint = fp;
  e.in_collective = true;
  return e;
}
std::vector<const RankEvidence*> ptrs(const std::vector<RankEvidence>& v) {
  std::vector<const RankEvidence*> p;
  for (auto& e : v) p.push_back(&e);
  return p;
}
}  // namespace

TEST_CASE("call groups: the kind of mismatch in words, the groups largest first then by lowest rank") {
  using namespace scout::c3;
  std::string why;
  // Different collectives at one position: the order.
  std::vector<RankEvidence> order = {at(1, kBarrier, 7, 0xb), at(0, kAllreduce, 7, 0xa)};
  json g = collective_groups(ptrs(order), &why);
  CHECK(why == "the ranks call collectives in a different order");
  REQUIRE(g.size() == 2);
  CHECK(g[0]["ranks"] == json::array({0}));  // same size: the lowest rank first
  CHECK(g[0]["kind"] == "allreduce");
  CHECK(g[1]["rank_ranges"] == "1");
  // The same collective on two communicators.
  std::vector<RankEvidence> comms = {at(0, kBarrier, 7, 0xa), at(1, kBarrier, 7, 0xa), at(2, kBarrier, 8, 0xc)};
  g = collective_groups(ptrs(comms), &why);
  CHECK(why == "the ranks call barrier on different communicators");
  CHECK(g[0]["count"] == 2);
  CHECK(g[0]["rank_ranges"] == "0-1");
  // The same collective and communicator, another fingerprint: arguments.
  std::vector<RankEvidence> args = {at(0, kAllreduce, 7, 0xa), at(1, kAllreduce, 7, 0xd)};
  collective_groups(ptrs(args), &why);
  CHECK(why.find("with different arguments (root, operation, datatype or count)") != std::string::npos);
}

TEST_CASE("call groups: bounded at any size (groups, ranks listed per group)") {
  std::vector<RankEvidence> many;
  for (int r = 0; r < 5000; ++r) many.push_back(at(r, scout::c3::kAllreduce, 7, static_cast<std::uint64_t>(r % 100)));
  std::string why;
  json g = collective_groups(ptrs(many), &why);
  CHECK(g.size() == kMaxGroups);
  CHECK(g[0]["count"] == 50);
  CHECK(g[0]["ranks"].size() == 50);
  std::vector<RankEvidence> big;
  for (int r = 0; r < 1000; ++r) big.push_back(at(r, scout::c3::kAllreduce, 7, r == 999 ? 2 : 1));
  g = collective_groups(ptrs(big), &why);
  CHECK(g[0]["ranks"].size() == 64);
  CHECK(g[0]["count"] == 999);
  CHECK(g[0]["rank_ranges"] == "0-63,...");
}

TEST_CASE("call groups: the sentence names each group's call and line from its stack, or says none was taken") {
  using namespace scout::c3;
  std::vector<RankEvidence> order = {at(0, kAllreduce, 7, 0xa), at(1, kAllreduce, 7, 0xa),
                                     at(2, kBarrier, 7, 0xb), at(3, kBcast, 7, 0xc)};
  std::string why;
  json ev = {{"position", 21}, {"groups", collective_groups(ptrs(order), &why)}, {"mismatch", why}};
  StackTree t;
  for (int r : {0, 1})
    t.add(r, {"opal_progress", "MPI_Allreduce (probe.cpp:9)", "exchange (train.c:62)", "main (train.c:90)", "_start"}, "");
  t.add(2, {"MPI_Barrier", "sync_all", "main (train.c:91)"}, "");  // the caller has no line tables
  t.add(3, {}, "ptrace: Operation not permitted");
  describe_groups(ev, &t);
  CHECK(ev["summary"] ==
        "ranks 0-1 in MPI_Allreduce (train.c:62), rank 2 in MPI_Barrier (from sync_all), rank 3 in bcast at "
        "collective 21 of communicator 0000000000000007: the ranks call collectives in a different order");
  CHECK(ev["groups"][0]["site"] == "train.c:62");
  CHECK(ev["groups"][0]["caller"] == "exchange (train.c:62)");
  CHECK_FALSE(ev["groups"][1].contains("site"));
  CHECK(ev["groups"][1]["caller"] == "sync_all");
  CHECK(ev["groups"][2]["stack_error"] == "ptrace: Operation not permitted");
  // No stacks at all: the calls by kind, each group saying why.
  json bare = {{"position", 21}, {"groups", collective_groups(ptrs(order), &why)}, {"mismatch", why}};
  describe_groups(bare, nullptr);
  CHECK(bare["summary"].get<std::string>().rfind("ranks 0-1 in allreduce, rank 2 in barrier, rank 3 in bcast at", 0) == 0);
  CHECK(bare["groups"][0]["stack_error"] == "no stack taken");
  // Evidence without groups is left alone.
  json other = {{"rule", "x"}};
  describe_groups(other, &t);
  CHECK_FALSE(other.contains("summary"));
}

TEST_CASE("call groups: a sentence of a thousand long frames stays bounded") {
  std::vector<RankEvidence> many;
  for (int r = 0; r < 64; ++r) many.push_back(at(r, scout::c3::kAllreduce, 7, static_cast<std::uint64_t>(r)));
  std::string why;
  json ev = {{"groups", collective_groups(ptrs(many), &why)}, {"mismatch", why}};
  StackTree t;
  for (int r = 0; r < 64; ++r)
    t.add(r, {"MPI_Allreduce", std::string(150, 'f') + " (" + std::to_string(r) + ".c:1)"}, "");
  describe_groups(ev, &t);
  CHECK(ev["summary"].get<std::string>().size() <= kMaxSummary + 4);
}

TEST_CASE("state groups: every rank of a hang by what it is in, and the sentence says where each group is") {
  using namespace scout::c3;
  std::vector<RankEvidence> ev;
  for (int r = 0; r < 6; ++r) {
    RankEvidence e = at(r, kAllreduce, 7, 0xa);
    e.attached = true;
    e.state = 'S';
    e.seq = 29;
    ev.push_back(e);
  }
  ev[2].in_collective = false;  // spinning outside MPI
  ev[2].state = 'R';
  ev[3].in_collective = false;  // stopped
  ev[3].state = 'T';
  ev[4].in_collective = false;  // waits for rank 3 in MPI_Recv, on the world communicator
  ev[4].p2p_call = "MPI_Recv";
  ev[4].p2p_peers = {3, -1};
  ev[4].p2p_comm = 9;
  ev[5].attached = false;  // never seen: not a group of its own
  json g = state_groups(ev);
  REQUIRE(g.size() == 4);
  CHECK(g[0]["state"] == "collective");
  CHECK(g[0]["rank_ranges"] == "0-1");
  CHECK(g[0]["position"] == 29);
  CHECK(g[1]["state"] == "outside");
  CHECK(g[1]["process"] == "running");
  CHECK(g[2]["process"] == "stopped");
  CHECK(g[3]["state"] == "p2p");
  CHECK(g[3]["peers"] == json::array({3, -1}));
  json evidence = {{"rule", "r"}, {"groups", g}};
  StackTree t;
  for (int r : {0, 1}) t.add(r, {"MPI_Allreduce", "exchange (train.c:62)", "main (train.c:90)"}, "");
  t.add(2, {"spin", "compute (train.c:40)", "main (train.c:88)"}, "");  // innermost without a site
  t.add(4, {"MPI_Recv", "halo (train.c:70)", "main (train.c:91)"}, "");
  describe_groups(evidence, &t);
  CHECK(evidence["summary"] ==
        "ranks 0-1 in MPI_Allreduce (train.c:62) at collective 29, rank 2 outside MPI (running) at compute "
        "(train.c:40), rank 3 outside MPI (stopped), rank 4 in MPI_Recv (train.c:70) for rank 3 or any source");
  CHECK(evidence["groups"][1]["site"] == "train.c:40");
  CHECK(evidence["groups"][2]["stack_error"] == "no stack taken");
}

TEST_CASE("call groups: a group's stack is found past the 64 ranks a class lists") {
  // 128 ranks at one line; rank 100 alone passes another fingerprint: its
  // class (ranks 0-127 at that line) lists ranks 0-63 only.
  std::vector<RankEvidence> ev;
  for (int r = 0; r < 128; ++r) ev.push_back(at(r, scout::c3::kAllreduce, 7, r == 100 ? 2 : 1));
  std::string why;
  json e = {{"position", 9}, {"groups", collective_groups(ptrs(ev), &why)}, {"mismatch", why}};
  StackTree t;
  for (int r = 0; r < 128; ++r) t.add(r, {"MPI_Allreduce", "step (t.c:5)", "main (t.c:9)"}, "");
  describe_groups(e, &t);
  CHECK(e["groups"][1]["ranks"] == json::array({100}));
  CHECK(e["groups"][1]["site"] == "t.c:5");
  CHECK(e["summary"].get<std::string>().find("127 ranks in MPI_Allreduce (t.c:5), rank 100 in MPI_Allreduce (t.c:5)") == 0);
}

TEST_CASE("state groups: each group says its own position once; a rank stopped inside MPI keeps its call") {
  using namespace scout::c3;
  std::vector<RankEvidence> ev;
  for (int r = 0; r < 4; ++r) {
    RankEvidence e = at(r, kAllreduce, 7, 0xa);
    e.attached = true;
    e.state = 'S';
    e.seq = 5;
    ev.push_back(e);
  }
  ev[3].state = 'T';  // SIGSTOPped inside MPI_Allreduce
  ev[2].in_collective = false;
  ev[2].state = 'R';
  json e = {{"rule", "same collective position, some ranks waiting and some not"}, {"position", 5},
            {"groups", state_groups(ev)}};
  describe_groups(e, nullptr);
  CHECK(e["summary"] ==
        "ranks 0-1 in allreduce at collective 5, rank 2 outside MPI (running), rank 3 in allreduce at collective 5, "
        "stopped");
  CHECK(e["groups"][2]["process"] == "stopped");
  CHECK(e["groups"][2]["state"] == "collective");
}

TEST_CASE("call groups: groups past the bound are counted in the sentence; a long sentence is cut on a character") {
  std::vector<RankEvidence> ev;
  for (int r = 0; r < 40; ++r) ev.push_back(at(r, scout::c3::kAllreduce, 7, static_cast<std::uint64_t>(r)));
  std::string why;
  std::size_t dropped = 0;
  json e = {{"groups", collective_groups(ptrs(ev), &why, &dropped)}, {"mismatch", why}};
  CHECK(dropped == 40 - kMaxGroups);
  e["groups_dropped"] = dropped;
  describe_groups(e, nullptr);
  CHECK(e["summary"].get<std::string>().find(", and 24 more groups: ") != std::string::npos);
  // Frames in a multi-byte script, long enough to be cut.
  StackTree t;
  std::string name;
  for (int i = 0; i < 30; ++i) name += "\xc3\xa9";  // é
  for (int r = 0; r < 40; ++r) t.add(r, {"MPI_Allreduce", name + " (" + name + ".c:1)"}, "");
  json f = {{"groups", collective_groups(ptrs(ev), &why)}, {"mismatch", why}};
  describe_groups(f, &t);
  const std::string s = f["summary"].get<std::string>();
  REQUIRE(s.size() > 4);
  CHECK(s.size() <= kMaxSummary + 4);
  CHECK(s.substr(s.size() - 4) == " ...");
  CHECK_NOTHROW((void)f.dump());  // valid UTF-8 (dump throws on a cut character)
}

TEST_CASE("call groups: which arguments differ, in words, and each group's value in the sentence") {
  using namespace scout::c3;
  std::string why;
  auto bcast = [](int r, std::int64_t root, std::int64_t count, std::uint64_t dt, std::uint64_t fp) {
    RankEvidence e = at(r, kBcast, 7, fp);
    e.coll_root = root;
    e.coll_count = count;
    e.coll_datatype = dt;
    return e;
  };
  // Roots: code 7 is MPI_INT.
  std::vector<RankEvidence> roots = {bcast(0, 0, 4, 7, 0xa), bcast(1, 0, 4, 7, 0xa), bcast(2, 2, 4, 7, 0xb)};
  json g = collective_groups(ptrs(roots), &why);
  CHECK(why == "the ranks call bcast with different roots");
  REQUIRE(g.size() == 2);
  CHECK(g[0]["args"] == json{{"count", 4}, {"datatype", "MPI_INT"}, {"bytes", 16}, {"root", 0}});
  CHECK(g[0]["with"] == "root 0");
  CHECK(g[1]["with"] == "root 2");
  json ev = {{"groups", g}, {"mismatch", why}, {"position", 21}};
  describe_groups(ev, nullptr);
  CHECK(ev["summary"] ==
        "ranks 0-1 in bcast with root 0, rank 2 in bcast with root 2 at collective 21 of communicator "
        "0000000000000007: the ranks call bcast with different roots");
  // The world's identity is said by name.
  json named = {{"groups", g}, {"mismatch", why}, {"position", 21}};
  describe_groups(named, nullptr, 7);
  CHECK(named["summary"].get<std::string>().find("at collective 21 of MPI_COMM_WORLD: ") != std::string::npos);
  // Amounts: bytes, whatever datatype spells them (one contiguous type of 16
  // bytes against four MPI_INT is no difference) ...
  std::vector<RankEvidence> same = {bcast(0, 0, 1, 0x10000000 | 16, 0xa), bcast(1, 0, 4, 7, 0xb)};
  collective_groups(ptrs(same), &why);
  CHECK(why == "the ranks call bcast with different arguments (root, operation, datatype or count)");
  std::vector<RankEvidence> more = {bcast(0, 0, 4, 7, 0xa), bcast(1, 0, 5, 7, 0xb)};
  g = collective_groups(ptrs(more), &why);
  CHECK(why == "the ranks call bcast with different amounts of data");
  CHECK(g[1]["with"] == "20 bytes");
  // ... a reduction's count, datatype and operation (code 3 is MPI_SUM, 1
  // MPI_MAX; datatype 14 is MPI_DOUBLE).
  auto red = [](int r, std::uint64_t op, std::int64_t count, std::uint64_t fp) {
    RankEvidence e = at(r, kAllreduce, 7, fp);
    e.coll_op = op;
    e.coll_count = count;
    e.coll_datatype = 14;
    return e;
  };
  std::vector<RankEvidence> ops = {red(0, 3, 8, 0xa), red(1, 1, 9, 0xb)};
  g = collective_groups(ptrs(ops), &why);
  CHECK(why == "the ranks call allreduce with different operations and counts or datatypes");
  CHECK(g[0]["with"] == "MPI_SUM, 8 x MPI_DOUBLE");
  CHECK(g[1]["args"]["op"] == "MPI_MAX");
  // An NCCL rank's codes are NCCL's (ncclFloat16 + 1, ncclSum + 1).
  RankEvidence n = red(0, 1, 8, 0xa);
  n.coll_datatype = 7;
  n.gpu.present = true;
  std::vector<RankEvidence> nccl = {n};
  CHECK(collective_groups(ptrs(nccl), &why)[0]["args"] == json{{"count", 8}, {"datatype", "ncclFloat16"}, {"bytes", 16}, {"op", "ncclSum"}});
}

TEST_CASE("state groups: point-to-point tags are said only when known tags differ") {
  auto p2p = [](int r, const char* call, int peer, std::int64_t tag) {
    RankEvidence e;
    e.rank = r;
    e.attached = true;
    e.p2p_call = call;
    e.p2p_peers = {peer};
    e.p2p_tag = tag;
    return e;
  };
  // A receive with tag 99 beside completion calls (no tag in the record).
  json ev = {{"groups", state_groups({p2p(0, "MPI_Waitall", 1, -1), p2p(1, "MPI_Recv", 0, 99)})}};
  describe_groups(ev, nullptr);
  CHECK(ev["summary"].get<std::string>().find("tag") == std::string::npos);
  CHECK(ev["groups"][1]["tag"] == 99);
  // A send with tag 1 and a receive of tag 2.
  ev = {{"groups", state_groups({p2p(0, "MPI_Send", 1, 1), p2p(1, "MPI_Recv", 0, 2)})}};
  describe_groups(ev, nullptr);
  CHECK(ev["summary"] == "rank 0 in MPI_Send for rank 1 with tag 1, rank 1 in MPI_Recv for rank 0 with tag 2");
}
