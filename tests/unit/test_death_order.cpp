// Deaths and end events on two nodes are ordered by their ages (how long
// before the gather each happened, as its own observer saw it), never by
// the nanoseconds of two hosts' monotonic clocks, which start at each
// host's boot: a node up for days has larger clock values than one up for
// minutes whatever happened first.
#include <doctest/doctest.h>

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
  CHECK(d->evidence["later_deaths"].empty());  // rank 1 faulted after rank 3 died: the teardown's
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
  // Every rank exits (a SIGTERM handler calling exit()): the program's end,
  // nobody named; then one rank killed half a second before the rest: that
  // rank, a crash. (One gather's rules; a pass comparing every pair of ranks
  // made this 400 million comparisons: bench/teardown_bench.)
  std::vector<RankEvidence> v(20000);
  for (int r = 0; r < 20000; ++r) {
    auto& e = v[static_cast<std::size_t>(r)];
    e.rank = r;
    e.node = "n" + std::to_string(r / 8);
    e.attached = true;
    gone(e, 2.5 - 1e-6 * (r % 997), static_cast<std::int64_t>(r / 8) * kDays + 1'000'000'000);
    e.end_kind = "exit";
    e.end_ns = e.death_ns - 1000;
    e.end_age_s = e.dead_s + 1e-6;
  }
  auto o = opt();
  o.stopping = true;
  CHECK_FALSE(detect_crash(v, o).has_value());
  for (auto& e : v) e.end_kind.clear(), e.end_age_s = -1;
  v[12345].dead_s = 3.0;
  auto d = detect_crash(v, o);
  REQUIRE(d.has_value());
  CHECK(d->kind == c3::VerdictKind::kCrash);
  CHECK(d->ranks == std::vector<int>{12345});
  CHECK(d->evidence["later_deaths"].size() == 19999);
}
