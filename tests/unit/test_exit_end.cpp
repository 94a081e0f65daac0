// An exit before MPI_Finalize (issue 37): the rank that left while other
// ranks waited in MPI for it is named `abort` (the application ended the
// job: no drain), at two ranks too; every rank exiting, an exit nobody was
// left waiting for, one a sub-communicator's ranks did not need, and one
// during the launcher's stop name nobody; a rank that exited is never a
// crash, nor are the deaths of the teardown that follows it.
#include <doctest/doctest.h>

#include "progress_test_util.hpp"

using namespace progress_test;

namespace {
// Rank e exited (status 0) `age` seconds ago, its process gone.
void exited(RankEvidence& e, double age, std::int64_t at_ns = 1'000'000'000) {
  e.alive = false;
  e.in_collective = false;
  e.end_kind = "exit";
  e.end_code = 0;
  e.end_ns = at_ns;
  e.death_ns = at_ns + 1'000'000;
  e.dead_s = age;
}
// Rank e killed (no record) at `at_ns`, `age` seconds ago.
void killed(RankEvidence& e, double age, std::int64_t at_ns) {
  e.alive = false;
  e.death_ns = at_ns;
  e.dead_s = age;
}
}  // namespace

TEST_CASE("exit before MPI_Finalize: named abort at two ranks, the other stuck in MPI_Allreduce or killed since") {
  auto v = job(2, 20, true, 0.0);
  exited(v[1], 0.5);
  bool pending = false;
  CHECK_FALSE(detect_crash(v, opt(), &pending).has_value());
  CHECK(pending);  // rank 0 only just entered the collective: it may pass
  v[1].dead_s = 1.1;
  v[0].stalled_s = 1.1;  // still there a second later: left waiting
  pending = false;
  auto d = detect_crash(v, opt(), &pending);
  REQUIRE(d.has_value());
  CHECK_FALSE(pending);
  CHECK(d->kind == c3::VerdictKind::kAbort);
  CHECK(d->ranks == std::vector<int>{1});
  CHECK(d->evidence["summary"] ==
        "rank 1 exited (status 0) without calling MPI_Finalize while rank 0 in MPI_Allreduce waited");
  CHECK(d->evidence["culprits"][0]["exit_status"] == 0);
  // mpirun kills rank 0 0.3 s after the exit: named once the exit is a
  // margin old, and at the observers' stop before that.
  v = job(2, 20, true, 0.0);
  exited(v[1], 0.1);
  killed(v[0], 0.05, 1'300'000'000);
  pending = false;
  CHECK_FALSE(detect_crash(v, opt(), &pending).has_value());
  CHECK(pending);
  auto stop = opt();
  stop.stopping = true;
  d = detect_crash(v, stop);
  REQUIRE(d.has_value());
  CHECK(d->kind == c3::VerdictKind::kAbort);
  v[1].dead_s = 0.4;
  d = detect_crash(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->ranks == std::vector<int>{1});
  CHECK(d->evidence["left_waiting"][0]["alive"] == false);
}

TEST_CASE("exit before MPI_Finalize: every rank exiting, nobody waiting for it, or the launcher's stop name nobody") {
  // Every rank exits (a SIGTERM handler that calls exit() at scancel).
  auto v = job(4, 20, true, 0.0);
  for (int r = 0; r < 4; ++r) exited(v[static_cast<std::size_t>(r)], 2.0, 1'000'000'000 + r * 50'000'000);
  CHECK_FALSE(detect_crash(v, opt()).has_value());
  // Nobody left waiting in MPI: pending a while, then nothing (never a crash).
  v = job(3, 20, false, 0.0);
  exited(v[2], 0.5);
  bool pending = false;
  CHECK_FALSE(detect_crash(v, opt(), &pending).has_value());
  CHECK(pending);
  v[2].dead_s = 3.5;
  pending = false;
  CHECK_FALSE(detect_crash(v, opt(), &pending).has_value());
  CHECK_FALSE(pending);
  // The others stuck in a collective of a communicator without it (its
  // row's): they do not wait for it.
  v = job(4, 20, true, 5.0);
  for (auto& e : v) e.comm_members[e.comm_id] = {0, 1, 2};
  exited(v[3], 2.0);
  CHECK_FALSE(detect_crash(v, opt()).has_value());
  // A point-to-point wait for rank 3 (or any source) does wait for it.
  v[0].in_collective = false;
  v[0].p2p_call = "MPI_Recv";
  v[0].p2p_peers = {3};
  auto d = detect_crash(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->evidence["summary"] ==
        "rank 3 exited (status 0) without calling MPI_Finalize while rank 0 in MPI_Recv waited");
  // After the launcher said it stops the job: the stop's end.
  v = job(2, 20, true, 5.0);
  exited(v[1], 2.0);
  v[1].ended_on_stop = true;
  CHECK_FALSE(detect_crash(v, opt()).has_value());
}

TEST_CASE("exit before MPI_Finalize: abort, not crash, at four ranks; the teardown's deaths and errors are not named") {
  auto v = job(4, 20, true, 0.0);
  exited(v[3], 2.0);
  for (int r : {0, 1, 2}) killed(v[static_cast<std::size_t>(r)], 1.5, 1'500'000'000);  // mpirun's kills
  auto d = detect_crash(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->kind == c3::VerdictKind::kAbort);
  CHECK(d->ranks == std::vector<int>{3});
  CHECK(d->evidence["left_waiting"].size() == 3);
  // A rank whose call then failed for want of its peer (an MPI error) is
  // the exit's victim, not the cause.
  v[0].end_kind = "mpi_error";
  v[0].end_ns = 1'200'000'000;
  v[0].end_code = 6;
  d = detect_crash(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->ranks == std::vector<int>{3});
  // Rank 1 died (SIGKILL, no record) before rank 3 exited: rank 1 is the
  // crash, and the exit is the teardown's.
  v[0].end_kind.clear();
  killed(v[1], 2.5, 500'000'000);
  d = detect_crash(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->kind == c3::VerdictKind::kCrash);
  CHECK(d->ranks == std::vector<int>{1});
}

TEST_CASE("exit before MPI_Finalize: a death long after a harmless exit is still a crash") {
  // Rank 3 exited with nobody waiting (srun goes on); 30 s later rank 1 is
  // SIGKILLed (the OOM killer) while the others live on.
  auto v = job(4, 20, false, 0.0);
  exited(v[3], 32.0);
  killed(v[1], 2.0, 31'000'000'000);
  auto d = detect_crash(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->kind == c3::VerdictKind::kCrash);
  CHECK(d->ranks == std::vector<int>{1});
}
