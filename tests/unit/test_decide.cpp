// The decision layer without MPI, threads or SQLite: the incident book's
// replication and debounce rules, and the decider's commit-before-announce
// queue with a sink that fails on purpose.
#include <doctest/doctest.h>

#include <stdexcept>

#include "libc3/verdict_kind.hpp"
#include "scoutd/decide/decider.hpp"
#include "scoutd/decide/incident_book.hpp"
#include "scoutd/decide/replica_writer.hpp"

#include <map>

using namespace scout::scoutd;
namespace c3 = scout::c3;
using nlohmann::json;

namespace {

// A sink that fails the first `fail` commits, then assigns ids 1, 2, ...
struct FlakySink : VerdictSink {
  int fail = 0;
  std::int64_t next = 1;
  std::vector<VerdictToCommit> committed;
  std::vector<std::pair<std::string, std::string>> resolutions;
  std::map<std::string, std::int64_t> by_key;  // idempotent on the stable key
  std::int64_t commit_verdict(const VerdictToCommit& v) override {
    if (fail > 0) {
      --fail;
      throw std::runtime_error("database is locked");
    }
    if (auto it = by_key.find(v.vkey); it != by_key.end()) return it->second;
    committed.push_back(v);
    return by_key[v.vkey] = next++;
  }
  void commit_resolution(const std::string& vkey, const std::string& at) override {
    if (fail > 0) {
      --fail;
      throw std::runtime_error("disk I/O error");
    }
    resolutions.emplace_back(vkey, at);
  }
};

VerdictDraft draft(const std::string& key, c3::VerdictKind kind = c3::VerdictKind::kStall,
                   c3::VerdictStatus status = c3::VerdictStatus::kAttributed) {
  VerdictDraft d;
  d.kind = kind;
  d.status = status;
  d.ranks = {4};
  d.hosts = {"n3"};
  d.evidence = {{"rule", "test"}};
  d.key = key;
  return d;
}

struct Fixture {
  IncidentBook book;
  FlakySink sink;
  std::vector<std::string> logs, warnings;
  int clock = 0;
  Decider decider{"17", "0", "17.0.o0.99", book, sink,
                  Decider::Hooks{[this] { return "2026-12-01T00:00:0" + std::to_string(clock++) + ".000Z"; },
                                 [this](const std::string& m) { logs.push_back(m); },
                                 [this](const std::string& m) { warnings.push_back(m); }}};
};

}  // namespace

TEST_CASE("decider: a verdict the sink refuses is kept and committed on a later flush, announced once") {
  Fixture f;
  f.sink.fail = 3;
  f.decider.propose(draft("behind:4"));
  for (int round = 0; round < 3; ++round) {
    json events = json::array();
    CHECK(f.decider.flush(events) == 0);
    CHECK(events.empty());                   // nothing announced before it is committed
    CHECK_FALSE(f.book.is_open("behind:4"));
    CHECK(f.decider.pending() == 1);
  }
  // A commit that failed is a warning (seen with SCOUT_LOG_LEVEL=warning).
  REQUIRE(f.warnings.size() == 3);
  CHECK(f.warnings[0].find("not committed yet") != std::string::npos);
  json events = json::array();
  CHECK(f.decider.flush(events) == 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0]["op"] == "new");
  CHECK(events[0]["verdict"]["id"] == 1);
  CHECK(events[0]["verdict"]["kind"] == "stall");
  CHECK(events[0]["verdict"]["detected_at"] == "2026-12-01T00:00:00.000Z");  // when it was decided
  CHECK(events[0]["verdict"]["vkey"] == "17.0.o0.99.1");  // the same key on every node
  CHECK(f.book.is_open("behind:4"));
  CHECK(f.decider.pending() == 0);
  CHECK(f.sink.committed.size() == 1);
  // The same incident seen again is not recorded twice.
  f.decider.propose(draft("behind:4"));
  CHECK(f.decider.pending() == 0);
}

TEST_CASE("decider: the same incident proposed while queued is queued once") {
  Fixture f;
  f.sink.fail = 1;
  f.decider.propose(draft("crash:2", c3::VerdictKind::kCrash));
  f.decider.propose(draft("crash:2", c3::VerdictKind::kCrash));
  json events = json::array();
  f.decider.flush(events);
  CHECK(f.decider.pending() == 1);
  f.decider.flush(events);
  CHECK(f.sink.committed.size() == 1);
}

TEST_CASE("decider: order is kept: a resolution waits for its verdict's commit") {
  Fixture f;
  f.sink.fail = 1;
  f.decider.propose(draft("straggler:3", c3::VerdictKind::kStraggler));
  f.decider.resolve("straggler:3");
  CHECK(f.decider.pending() == 2);
  json events = json::array();
  CHECK(f.decider.flush(events) == 0);
  CHECK(f.decider.flush(events) == 2);
  REQUIRE(events.size() == 2);
  CHECK(events[0]["op"] == "new");
  CHECK(events[1]["op"] == "resolve");
  CHECK(events[1]["id"] == 1);
  CHECK_FALSE(f.book.is_open("straggler:3"));
  REQUIRE(f.sink.resolutions.size() == 1);
  CHECK(f.sink.resolutions[0].first == "17.0.o0.99.1");
  CHECK(events[1]["vkey"] == "17.0.o0.99.1");
  CHECK(f.book.verdicts()[0]["resolved_at"] == f.sink.resolutions[0].second);
}

TEST_CASE("decider: progress resumed resolves hang, behind and divergence incidents, not stragglers") {
  Fixture f;
  f.decider.propose(draft("behind:4:100"));
  f.decider.propose(draft("divergence:1:7", c3::VerdictKind::kDivergence));
  f.decider.propose(draft("straggler:5", c3::VerdictKind::kStraggler));
  json events = json::array();
  f.decider.flush(events);
  f.decider.progress_resumed();
  events = json::array();
  CHECK(f.decider.flush(events) == 2);
  CHECK(f.book.open_keys({""}) == std::vector<std::string>{"straggler:5"});
  CHECK(f.decider.open_or_queued("straggler") == std::set<std::string>{"straggler:5"});
}

TEST_CASE("decider: an inconclusive draft must be seen in two consecutive gathers") {
  Fixture f;
  auto inc = draft("hang-inconclusive:9", c3::VerdictKind::kHang, c3::VerdictStatus::kInconclusive);
  f.decider.propose_all({inc});
  CHECK(f.decider.pending() == 0);
  f.decider.propose_all({});  // a gather without it: the count starts again
  f.decider.propose_all({inc});
  CHECK(f.decider.pending() == 0);
  f.decider.propose_all({inc});
  CHECK(f.decider.pending() == 1);
  // Attributed drafts are not debounced.
  f.decider.propose_all({draft("behind:1")});
  CHECK(f.decider.pending() == 2);
}

TEST_CASE("incident book: replicated events are idempotent; malformed ones are counted, not trusted") {
  IncidentBook book;
  json v = {{"id", 7}, {"kind", "observer_lost"}, {"evidence", {{"observer", 2}}}, {"resolved_at", nullptr}};
  book.note_lost(2);
  book.note_lost(3);
  json events = json::array({{{"op", "new"}, {"key", "observer_lost:2"}, {"verdict", v}}});
  book.apply(events);
  book.apply(events);  // the deciding observer applied it already
  CHECK(book.verdicts().size() == 1);
  CHECK(book.lost_unrecorded() == std::set<int>{3});
  book.apply(json::array({{{"op", "new"}, {"key", 5}}, {{"op", "resolve"}, {"key", "observer_lost:2"}, {"id", "x"}},
                          "garbage", {{"op", "explode"}, {"key", "k"}}}));
  CHECK(book.malformed_events() == 4);
  CHECK(book.is_open("observer_lost:2"));
  book.apply(json::array({{{"op", "resolve"}, {"key", "observer_lost:2"}, {"id", 7}, {"at", "T"}}}));
  CHECK_FALSE(book.is_open("observer_lost:2"));
  CHECK(book.verdicts()[0]["resolved_at"] == "T");
}

TEST_CASE("observer_lost draft names the node and the ranks left unobserved") {
  auto d = observer_lost_draft({2, "n3", 4242, {4, 5}}, 1.0);
  CHECK(d.kind == c3::VerdictKind::kObserverLost);
  CHECK(d.status == c3::VerdictStatus::kAttributed);
  CHECK(d.hosts == std::vector<std::string>{"n3"});
  CHECK(d.evidence["unobserved_ranks"] == json::array({4, 5}));
  CHECK(d.key == "observer_lost:2");
}

TEST_CASE("verdict kinds: one list; names round-trip; drainable kinds") {
  for (auto k : c3::kAllVerdictKinds) CHECK(c3::verdict_kind_from(c3::to_string(k)) == k);
  for (auto s : c3::kAllVerdictStatuses) CHECK(c3::verdict_status_from(c3::to_string(s)) == s);
  CHECK_FALSE(c3::verdict_kind_from("stalled").has_value());
  CHECK(c3::drainable(c3::VerdictKind::kSdc));
  CHECK_FALSE(c3::drainable(c3::VerdictKind::kTelemetryAnomaly));
  CHECK_FALSE(c3::drainable(c3::VerdictKind::kObserverLost));
  CHECK(c3::drainable_kinds_text() == "hang, stall, crash, divergence, sdc, gpu_hang or gpu_health");
}

TEST_CASE("replicas: every observer commits the decider's verdicts in order, idempotently, retrying") {
  Fixture root;
  root.decider.propose(draft("behind:4"));
  root.decider.resolve("behind:4");
  json events = json::array();
  REQUIRE(root.decider.flush(events) == 2);
  // Another observer (its own prefix) with a ledger that is locked twice.
  FlakySink local;
  local.fail = 2;
  std::vector<std::string> logs;
  ReplicaWriter w(local, "17.0.o1.55", [&](const std::string& m) { logs.push_back(m); });
  w.take(events);
  CHECK(w.pending() == 2);
  CHECK(w.flush() == 0);
  CHECK(w.flush() == 0);
  CHECK(w.pending() == 2);  // nothing lost, nothing out of order
  CHECK(w.flush() == 2);
  REQUIRE(local.committed.size() == 1);
  CHECK(local.committed[0].vkey == "17.0.o0.99.1");
  CHECK(local.committed[0].kind == c3::VerdictKind::kStall);
  CHECK(local.committed[0].ranks == std::vector<int>{4});
  CHECK(local.committed[0].detected_at == "2026-12-01T00:00:00.000Z");
  REQUIRE(local.resolutions.size() == 1);
  CHECK(local.resolutions[0].first == "17.0.o0.99.1");
  // The same events again (a repeated down message): one row still.
  w.take(events);
  w.flush();
  CHECK(local.committed.size() == 1);
  // The deciding observer skips its own verdicts: they are committed.
  ReplicaWriter self(local, "17.0.o0.99", [](const std::string&) {});
  self.take(events);
  CHECK(self.pending() == 0);
}

TEST_CASE("replicas: events that cannot be read are counted, never trusted") {
  FlakySink local;
  ReplicaWriter w(local, "17.0.o1.55", [](const std::string&) {});
  w.take(json::array({{{"op", "new"}, {"verdict", {{"vkey", "k"}, {"kind", "meltdown"}, {"status", "attributed"},
                                                   {"detected_at", "T"}}}},
                      {{"op", "new"}, {"verdict", {{"kind", "stall"}}}},
                      {{"op", "resolve"}, {"vkey", 5}},
                      {{"op", "new"}, {"verdict", {{"vkey", "k2"}, {"kind", "stall"}, {"status", "attributed"},
                                                   {"detected_at", "T"}, {"ranks", "not a list"}}}},
                      7}));
  CHECK(w.malformed() == 5);
  CHECK(w.pending() == 0);
}

TEST_CASE("incident book: an observer that missed rounds catches up from the snapshot") {
  Fixture root;
  root.decider.propose(draft("behind:4"));
  root.decider.propose(draft("crash:2", c3::VerdictKind::kCrash));
  json events = json::array();
  root.decider.flush(events);
  root.decider.resolve("behind:4");
  json later = json::array();
  root.decider.flush(later);
  IncidentBook lagging;
  lagging.apply(json::array({events[0]}));  // it saw only the first verdict
  CHECK_FALSE(lagging.digest() == root.book.digest());
  lagging.apply(root.book.snapshot());
  CHECK(lagging.digest() == root.book.digest());
  CHECK(lagging.verdicts().size() == 2);
  CHECK_FALSE(lagging.is_open("behind:4"));
  CHECK(lagging.is_open("crash:2"));
  // Its node's ledger gets the missing rows and the resolution, once.
  FlakySink local;
  ReplicaWriter w(local, "17.0.o1.55", [](const std::string&) {});
  w.take(json::array({events[0]}));
  w.take(root.book.snapshot());
  w.flush();
  CHECK(local.committed.size() == 2);
  REQUIRE(local.resolutions.size() == 1);
  CHECK(local.resolutions[0].first == "17.0.o0.99.1");
}

// Two deciding observers in turn (the first frozen, then back as the
// lowest): each numbers its verdicts from its own ledger's rows, so their
// ids repeat; the book knows a verdict by its stable key (found by the
// simulator's checker: the second root's verdict 3 was dropped as
// "already applied" and the books never agreed again).
TEST_CASE("incident book: verdicts of two deciding observers with the same ids are two verdicts") {
  Fixture a;
  a.decider.propose(draft("crash@0:63,", c3::VerdictKind::kCrash));
  json ea = json::array();
  REQUIRE(a.decider.flush(ea) == 1);
  FlakySink other_sink;
  IncidentBook other_book;
  Decider b{"17", "0", "17.0.o1.42", other_book, other_sink,
            {[] { return std::string("2026-12-01T00:00:01.000Z"); }, [](const std::string&) {}, [](const std::string&) {}}};
  b.propose(draft("behind:4"));
  json eb = json::array();
  REQUIRE(b.flush(eb) == 1);
  CHECK(ea[0]["verdict"]["id"] == eb[0]["verdict"]["id"]);  // both 1
  IncidentBook book;
  book.apply(ea);
  book.apply(eb);
  CHECK(book.verdicts().size() == 2);
  CHECK(book.is_open("crash@0:63,"));
  CHECK(book.is_open("behind:4"));
  // A resolution names its verdict by the stable key: only that one closes.
  b.resolve("behind:4");
  json rb = json::array();
  REQUIRE(b.flush(rb) == 1);
  book.apply(rb);
  CHECK_FALSE(book.is_open("behind:4"));
  CHECK(book.is_open("crash@0:63,"));
  CHECK(book.digest().resolved == 1);
  // Same counts, other verdicts: the digests differ.
  IncidentBook only_a;
  only_a.apply(ea);
  IncidentBook only_b;
  only_b.apply(eb);
  CHECK(only_a.digest().verdicts == only_b.digest().verdicts);
  CHECK_FALSE(only_a.digest() == only_b.digest());
}

// A deciding observer queued a verdict for an incident another deciding
// observer already committed (its book arrived since): not committed twice.
TEST_CASE("decider: a queued verdict whose incident another deciding observer committed is dropped") {
  Fixture f;
  f.decider.propose(draft("crash@0:63,", c3::VerdictKind::kCrash));
  json theirs = json::array({{{"op", "new"},
                              {"key", "crash@0:63,"},
                              {"verdict", {{"id", 3}, {"vkey", "17.0.o1.42.3"}, {"kind", "crash"}}}}});
  f.book.apply(theirs);
  json events = json::array();
  f.decider.flush(events);
  CHECK(f.sink.committed.empty());
  CHECK(events.empty());
  CHECK(f.decider.pending() == 0);
}
