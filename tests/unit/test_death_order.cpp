// Deaths and end events on two nodes are ordered by their ages (how long
// before the gather each happened, as its own observer saw it), never by
// the nanoseconds of two hosts' monotonic clocks, which start at each
// host's boot: a node up for days has larger clock values than one up for
// minutes whatever happened first.
#include <doctest/doctest.h>

#include <algorithm>

#include "progress_test_util.hpp"
#include "scoutd/detect/progress_rules.hpp"

using namespace progress_test;
using scout::scoutd::rules::detect_end_event;

namespace {
constexpr std::int64_t kDays = 3LL * 86400 * 1'000'000'000;  // node n1 booted three days before n2
// Rank e gone `age` seconds ago at `at_ns` of its own node's clock.
void gone(RankEvidence& e, double age, std::int64_t at_ns) {
  e.alive = false;
  e.in_collective = false;
  e.death_ns = at_ns;
  e.dead_s = age;
}
void signalled(RankEvidence& e, double age, std::int64_t at_ns, int sig = 11) {
  gone(e, age, at_ns + 1'000'000);
  e.end_kind = "signal";
  e.end_code = sig;
  e.end_ns = at_ns;
  e.end_age_s = age + 0.001;
}
}  // namespace

TEST_CASE("death order: the crash names the rank that died first on two nodes with unrelated clocks") {
  // Ranks 0-1 on n1 (up three days), 2-3 on n2 (up minutes). Rank 2 dies
  // first (3 s ago, n2's clock at 5 s); rank 0 on n1 dies 2 s later, at a
  // far larger clock value. The raw clocks would name rank 0.
  auto v = job(4, 20, true, 3.0);
  gone(v[2], 3.0, 5'000'000'000);
  gone(v[0], 1.0, kDays);
  auto d = detect_crash(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->kind == c3::VerdictKind::kCrash);
  CHECK(d->ranks == std::vector<int>{2});
  REQUIRE(d->evidence["later_deaths"].size() == 1);
  CHECK(d->evidence["later_deaths"][0]["rank"] == 0);
  CHECK(d->evidence["later_deaths"][0]["after_s"].get<double>() == doctest::Approx(2.0));
  // The same deaths the other way round: rank 0 first.
  gone(v[2], 1.0, 5'000'000'000);
  gone(v[0], 3.0, kDays);
  d = detect_crash(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->ranks == std::vector<int>{0});
}

TEST_CASE("death order: the first fatal signal on two nodes is named, by the events' ages") {
  auto v = job(4, 20, true, 3.0);
  signalled(v[3], 2.0, 7'000'000'000);  // n2: first
  signalled(v[1], 0.5, kDays);          // n1: a second and a half later (a victim of the first)
  auto d = detect_end_event(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->ranks == std::vector<int>{3});
  REQUIRE(d->evidence.contains("later"));
  CHECK(d->evidence["later"].empty());  // rank 1 faulted after rank 3 died: the teardown's, not listed
  // Had rank 3 died later (its handler slow), rank 1's signal is the later one.
  v[3].death_ns += 1'000'000'000;
  v[3].dead_s = 0.4;  // (its signal still 2.001 s ago)
  d = detect_end_event(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->ranks == std::vector<int>{3});
  REQUIRE(d->evidence["later"].size() == 1);
  CHECK(d->evidence["later"][0]["rank"] == 1);
}

TEST_CASE("death order: a fault after another node's rank had died is the teardown's, not the cause") {
  // Rank 0 (n1) was killed 4 s ago (no event: SIGKILL); rank 2 (n2) faults
  // 1 s ago while the job is torn down. Its raw clock value is the smaller.
  auto v = job(4, 20, true, 4.0);
  gone(v[0], 4.0, kDays);
  signalled(v[2], 1.0, 9'000'000'000);
  CHECK_FALSE(detect_end_event(v, opt()).has_value());
  auto d = detect_crash(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->ranks == std::vector<int>{0});
}

TEST_CASE("death order: evidence from an observer that sends no event age is ordered by its death's age") {
  auto v = job(4, 20, true, 3.0);
  signalled(v[3], 2.0, 7'000'000'000);
  signalled(v[1], 0.5, kDays);
  v[3].end_age_s = v[1].end_age_s = -1;  // unknown: from the deaths' ages (2.0 + 0.001, 0.5 + 0.001)
  auto d = detect_end_event(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->ranks == std::vector<int>{3});
}

TEST_CASE("death order: an older observer's live rank whose MPI_Abort has no age is never put last") {
  // Rank 0 called MPI_Abort and is still alive (its observer sends no age);
  // rank 1's call failed half a second later and it is gone. The abort of
  // unknown age cannot be ordered: it is among the first, never "later".
  auto v = job(4, 20, true, 1.0);
  v[0].end_kind = "abort";
  v[0].end_code = 3;
  v[0].end_ns = 5'000'000'000;
  v[1].end_kind = "mpi_error";
  v[1].end_addr = 6;
  v[1].end_ns = 5'500'000'000;
  gone(v[1], 0.4, 5'600'000'000);
  auto d = detect_end_event(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->kind == c3::VerdictKind::kAbort);
  CHECK(std::find(d->ranks.begin(), d->ranks.end(), 0) != d->ranks.end());
  CHECK(d->evidence["later"].empty());
  // With its age known, it is the first alone.
  v[0].end_age_s = 1.0;
  v[1].end_age_s = 0.5;
  d = detect_end_event(v, opt());
  REQUIRE(d.has_value());
  CHECK(d->ranks == std::vector<int>{0});
  REQUIRE(d->evidence["later"].size() == 1);
  CHECK(d->evidence["later"][0]["rank"] == 1);
}

TEST_CASE("death order: an end event's age travels with the evidence; a bad one is refused") {
  auto v = job(1, 3, true, 1.5)[0];
  signalled(v, 2.0, 7'000'000'000);
  nlohmann::json j = v;
  CHECK(j.at("end").at("age_s").get<double>() == doctest::Approx(2.001));
  CHECK(j.get<RankEvidence>().end_age_s == doctest::Approx(2.001));
  j["end"].erase("age_s");  // an older observer's evidence: unknown
  CHECK(j.get<RankEvidence>().end_age_s < 0);
  for (auto bad : {nlohmann::json(-1.0), nlohmann::json("2"), nlohmann::json(nullptr)}) {
    j["end"]["age_s"] = bad;
    CHECK_THROWS_WITH_AS(j.get<RankEvidence>(), doctest::Contains("end.age_s: expected a non-negative number"),
                         std::invalid_argument);
  }
}

TEST_CASE("death order: a teardown of 20,000 ranks on 2,500 nodes is judged as a small one") {
  // Rank 7 exits with nobody waiting for it (srun goes on); the launcher
  // kills the other 19,999 two seconds later: the exit's teardown, no
  // crash. Then the same with the exit 30 s earlier and rank 12345 killed
  // half a second before the others: it is the crash, 19,998 later deaths.
  // (One gather's rules; the pass comparing every pair of ranks that they
  // made before was 400 million comparisons here: bench/teardown_bench.)
  std::vector<RankEvidence> v(20000);
  for (int r = 0; r < 20000; ++r) {
    auto& e = v[static_cast<std::size_t>(r)];
    e.rank = r;
    e.node = "n" + std::to_string(r / 8);
    e.attached = true;
    gone(e, 1.0 - 1e-6 * (r % 997), static_cast<std::int64_t>(r / 8) * kDays + 1'000'000'000);
  }
  auto& x = v[7];
  x.end_kind = "exit";
  x.dead_s = 3.0;
  x.end_age_s = 3.001;
  x.end_ns = x.death_ns - 1'000'000;
  auto o = opt();
  o.stopping = true;
  CHECK_FALSE(detect_crash(v, o).has_value());
  x.dead_s = 31.0;
  x.end_age_s = 31.001;
  v[12345].dead_s = 1.5;
  auto d = detect_crash(v, o);
  REQUIRE(d.has_value());
  CHECK(d->kind == c3::VerdictKind::kCrash);
  CHECK(d->ranks == std::vector<int>{12345});
  CHECK(d->evidence["later_deaths"].size() == 19998);
  // ... and every rank exiting is the program's end: nobody named.
  for (auto& e : v) e.end_kind = "exit", e.end_age_s = e.dead_s + 0.001, e.end_ns = e.death_ns - 1'000'000;
  CHECK_FALSE(detect_crash(v, o).has_value());
}
