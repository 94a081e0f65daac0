// Checkpoint certification rules, the watcher's notion of "complete", and
// signed collective outputs compared across ranks.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "libc3/rank_record.hpp"
#include "scoutd/beside/checkpoints.hpp"
#include "scoutd/detect/output_tracker.hpp"
#include "scoutd/detect/progress_detector.hpp"

using namespace scout::scoutd;
namespace c3 = scout::c3;
namespace sq = scout::sql;

namespace {
sq::ReplayCycleRow cycle(long id, std::int64_t start, std::int64_t end, const char* outcome) {
  sq::ReplayCycleRow r;
  r.job_id = "1";
  r.cycle = id;
  r.started_ms = start;
  r.finished_ms = end;
  r.devices = 8;
  r.outcome = outcome;
  return r;
}
sq::CheckpointRow ckpt(std::int64_t written) {
  sq::CheckpointRow c;
  c.id = 1;
  c.path = "/c";
  c.written_ms = written;
  c.state = "candidate";
  return c;
}
}  // namespace

TEST_CASE("certify: verified after a clean cycle that started after it") {
  std::vector<sq::ReplayCycleRow> cycles = {cycle(1, 100, 150, "clean")};
  CHECK_FALSE(certify(ckpt(200), cycles, {}).has_value());  // no cycle after it yet
  cycles.push_back(cycle(2, 300, 350, "dissent"));
  CHECK_FALSE(certify(ckpt(200), cycles, {}).has_value());  // a dissenting cycle does not verify
  cycles.push_back(cycle(3, 400, 450, "clean"));
  auto d = certify(ckpt(200), cycles, {});
  REQUIRE(d.has_value());
  CHECK(d->first == "recovery_verified");
  CHECK(d->second.find("cycle 3") != std::string::npos);
}

TEST_CASE("certify: rejected when an sdc verdict lies between the last clean cycle before it and then") {
  std::vector<sq::ReplayCycleRow> cycles = {cycle(1, 100, 150, "clean"), cycle(2, 300, 350, "dissent")};
  std::vector<SdcEvent> sdc = {{7, 340, "attributed replay"}};
  auto d = certify(ckpt(200), cycles, sdc);  // written at 200, sdc at 340: onset may predate it
  REQUIRE(d.has_value());
  CHECK(d->first == "rejected");
  CHECK(d->second.find("sdc verdict 7") != std::string::npos);
  CHECK(d->second.find("cycle 1") != std::string::npos);
  // An sdc before the last clean cycle does not taint a later checkpoint.
  std::vector<SdcEvent> old = {{3, 90, "x"}};
  cycles = {cycle(1, 100, 150, "clean"), cycle(2, 300, 350, "clean")};
  CHECK(certify(ckpt(200), cycles, old)->first == "recovery_verified");
  // An sdc after the verifying cycle finished does not reject it.
  std::vector<SdcEvent> late = {{4, 900, "x"}};
  CHECK(certify(ckpt(200), cycles, late)->first == "recovery_verified");
  // No clean cycle at all before it: any sdc since the job started counts.
  CHECK(certify(ckpt(200), {cycle(2, 300, 350, "clean")}, old)->first == "rejected");
  // Only candidates are decided.
  auto done = ckpt(200);
  done.state = "rejected";
  CHECK_FALSE(certify(done, cycles, {}).has_value());
}

TEST_CASE("ISO times round-trip to Unix ms") {
  CHECK(iso_to_unix_ms("1970-01-01T00:00:01.250Z") == 1250);
  CHECK(unix_ms_to_iso(1250) == "1970-01-01T00:00:01.250Z");
  CHECK(iso_to_unix_ms(unix_ms_to_iso(1795984503874)) == 1795984503874);
  CHECK(iso_to_unix_ms("garbage") == 0);
}

TEST_CASE("watcher: settle time, markers, entries present before the job") {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("scout-ckpt-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "old.bin") << "x";
  {
    CheckpointWatcher w(dir.string(), 1.0, "");
    std::ofstream(dir / "a.bin") << "x";
    std::ofstream(dir / ".hidden") << "x";
    std::ofstream(dir / "b.tmp") << "x";
    const std::int64_t t = 1'000'000;
    CHECK(w.poll(t).empty());            // just seen: not settled
    CHECK(w.poll(t + 500).empty());
    auto got = w.poll(t + 1200);
    REQUIRE(got.size() == 1);
    CHECK(got[0].path == (dir / "a.bin").string());
    CHECK(w.poll(t + 5000).empty());     // reported once
  }
  {
    CheckpointWatcher w(dir.string(), 0, "done");
    fs::create_directories(dir / "step-1");
    std::ofstream(dir / "step-1" / "w") << "x";
    CHECK(w.poll(1).empty());            // no marker yet
    std::ofstream(dir / "step-1" / "done") << "";
    auto got = w.poll(2);
    REQUIRE(got.size() == 1);
    CHECK(got[0].path == (dir / "step-1").string());
  }
  CHECK_THROWS_WITH_AS(CheckpointWatcher((dir / "nope").string(), 1, ""),
                       doctest::Contains("expected an existing directory"), std::runtime_error);
  fs::remove_all(dir);
}

namespace {
RankEvidence rank_with(int rank, std::uint64_t call, std::uint64_t sig) {
  RankEvidence e;
  e.rank = rank;
  e.node = "n" + std::to_string(rank + 1);
  e.outsigs.push_back({0xC0, call, 3, sig});
  return e;
}
}  // namespace

TEST_CASE("collective outputs: the rank a strict majority disagrees with; a tie names nobody") {
  OutputTracker t;
  std::vector<RankEvidence> ev;
  for (int r = 0; r < 4; ++r) ev.push_back(rank_with(r, 1, r == 2 ? 0xB : 0xA));
  auto v = t.update(ev);
  REQUIRE(v.size() == 1);
  CHECK(v[0].kind == c3::VerdictKind::kSdc);
  CHECK(v[0].status == c3::VerdictStatus::kAttributed);
  CHECK(v[0].ranks == std::vector<int>{2});
  CHECK(v[0].evidence["source"] == "collective_output");
  CHECK(v[0].evidence["agreeing_ranks"] == 3);
  CHECK(t.pending() == 0);

  OutputTracker tie;
  ev.clear();
  for (int r = 0; r < 4; ++r) ev.push_back(rank_with(r, 1, r >= 2 ? 0xB : 0xA));
  v = tie.update(ev);
  REQUIRE(v.size() == 1);
  CHECK(v[0].status == c3::VerdictStatus::kInconclusive);
  CHECK(v[0].ranks.empty());

  // Signatures arrive over several gathers: decided when all members reported.
  OutputTracker late;
  std::vector<RankEvidence> part;
  for (int r = 0; r < 4; ++r) {
    RankEvidence e;
    e.rank = r;
    e.node = "n1";
    if (r < 2) e.outsigs.push_back({0xC0, 5, 3, r == 1 ? 0xBull : 0xAull});
    part.push_back(e);
  }
  CHECK(late.update(part).empty());
  CHECK(late.pending() == 1);
  for (int r = 0; r < 4; ++r) {
    part[static_cast<std::size_t>(r)].outsigs.clear();
    if (r >= 2) part[static_cast<std::size_t>(r)].outsigs.push_back({0xC0, 5, 3, 0xA});
  }
  v = late.update(part);
  REQUIRE(v.size() == 1);
  CHECK(v[0].ranks == std::vector<int>{1});
}

TEST_CASE("record: output signatures ring wraps and keeps the newest") {
  auto rec = std::make_unique<scout::c3::RankRecord>();
  std::memset(static_cast<void*>(rec.get()), 0, sizeof *rec);
  using scout::c3::kOutSigRing;
  for (std::uint64_t i = 0; i < kOutSigRing + 10; ++i) scout::c3::outsig_push(*rec, 1, i + 1, 3, 100 + i, 8);
  std::vector<scout::c3::OutSig> out(kOutSigRing);
  std::uint64_t next = 0;
  auto n = scout::c3::outsig_read(*rec, 0, out.data(), &next);
  CHECK(n == kOutSigRing);
  CHECK(next == kOutSigRing + 10);
  CHECK(out[0].call == 11);
  CHECK(out[n - 1].sig == 100 + kOutSigRing + 9);
  CHECK(scout::c3::outsig_read(*rec, next, out.data(), &next) == 0);
}
