// Root's gating policy (gate/policy.hpp) and the verdict codec
// (common/verdict.hpp): every branch the Slurm integration tests reach
// (20_slurm_stall, 26_slurm_prolog, 28/29 ledgerd, 30_slurm_trust), without
// a node, a ledger or Slurm.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/verdict.hpp"
#include "gate/policy.hpp"
#include "sql/ledger.hpp"

using nlohmann::json;
using scout::c3::VerdictKind;
using scout::c3::VerdictStatus;
using scout::common::Verdict;
namespace gate = scout::gate;

namespace {

Verdict verdict(VerdictKind k, std::vector<std::string> hosts, std::string key = "7.0.o0.1.1",
                VerdictStatus s = VerdictStatus::kAttributed) {
  Verdict v;
  v.id = 3;
  v.job = "7";
  v.step = "0";
  v.kind = k;
  v.status = s;
  v.ranks = {4};
  v.hosts = std::move(hosts);
  v.detected_at = "2026-12-03T10:00:00.000Z";
  if (!key.empty()) v.key = key;
  return v;
}

// Root's checks with fixed answers, counting what the policy asked.
struct FakeChecks : gate::RootChecks {
  bool node_fails = false;
  std::string reproduce_result = "fail";
  gate::Blame blamed{0, 0};
  int node_checks = 0, reproduces = 0, blames = 0;
  std::vector<std::string> blame_kinds;
  gate::NodeCheckResult node_check() override {
    ++node_checks;
    return {node_fails, node_fails ? "kernel_log: machine check" : "", {{"checks", json::array()}}};
  }
  gate::CheckResult reproduce(const gate::ReplayTarget& t) override {
    ++reproduces;
    CHECK(t.recipe == "gemm");
    CHECK(t.core == 3);
    return {"reproduce", reproduce_result, "core 3 disagrees"};
  }
  gate::Blame blame(const std::vector<std::string>& kinds) override {
    ++blames;
    blame_kinds = kinds;
    return blamed;
  }
};

json replay_evidence() { return {{"source", "replay"}, {"recipe", "gemm"}, {"core", 3}, {"cycle", 12}}; }

}  // namespace

TEST_CASE("verdict codec: to_json and verdict_from_json are one form, strict on types") {
  Verdict v = verdict(VerdictKind::kStall, {"n3"});
  v.evidence = {{"culprits", json::array({{{"rank", 4}}})}};
  v.resolved_at = "2026-12-03T10:00:05.000Z";
  v.confirmation = "confirmed";
  const json j = scout::common::to_json(v);
  for (const char* k : {"id", "job", "step", "kind", "status", "ranks", "hosts", "evidence", "detected_at",
                        "resolved_at", "origin", "vkey", "confirmation"})
    CHECK_MESSAGE(j.contains(k), k);
  CHECK(j["origin"].is_null());
  CHECK(j["kind"] == "stall");
  auto back = scout::common::verdict_from_json(j);
  REQUIRE(back);
  CHECK(scout::common::to_json(*back) == j);

  std::string why;
  json bad = j;
  bad["ranks"] = json::array({"four"});
  CHECK_FALSE(scout::common::verdict_from_json(bad, &why));
  CHECK(why.find("ranks") != std::string::npos);
  bad = j;
  bad["hosts"] = json::array({"n3; rm -rf /"});
  CHECK_FALSE(scout::common::verdict_from_json(bad, &why));
  CHECK(why.find("hosts") != std::string::npos);
  bad = j;
  bad["kind"] = "meltdown";
  CHECK_FALSE(scout::common::verdict_from_json(bad, &why));
  CHECK(why.find("meltdown") != std::string::npos);
  bad = j;
  bad["evidence"] = "text";
  CHECK_FALSE(scout::common::verdict_from_json(bad, &why));
  CHECK(why.find("\"evidence\": an object") != std::string::npos);
  bad = j;
  bad["evidence"] = {{"blob", std::string(70000, 'x')}};
  CHECK_FALSE(scout::common::verdict_from_json(bad, &why));
  CHECK(why.find("evidence of") != std::string::npos);
  bad = j;
  bad.erase("detected_at");
  CHECK_FALSE(scout::common::verdict_from_json(bad, &why));
  CHECK(why.find("detected_at") != std::string::npos);
  bad = j;
  bad["vkey"] = 5;
  CHECK_FALSE(scout::common::verdict_from_json(bad, &why));
  CHECK(why.find("vkey") != std::string::npos);
}

TEST_CASE("verdict codec: a ledger row reads as the same verdict; a forged row is refused") {
  Verdict v = verdict(VerdictKind::kSdc, {"n1", "n2"});
  v.evidence = replay_evidence();
  scout::sql::VerdictRow r = scout::sql::to_row(v);
  auto back = scout::sql::to_verdict(r);
  REQUIRE(back);
  CHECK(scout::common::to_json(*back) == scout::common::to_json(v));
  r.hosts = "{\"n1\": 1}";
  std::string why;
  CHECK_FALSE(scout::sql::to_verdict(r, &why));
  CHECK(why.find("hosts") != std::string::npos);
  r = scout::sql::to_row(v);
  r.kind = "meltdown";
  CHECK_FALSE(scout::sql::to_verdict(r));
  r = scout::sql::to_row(v);
  r.evidence = "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]";
  r.ranks = "not json";
  back = scout::sql::to_verdict(r);  // shown with what can be read
  REQUIRE(back);
  CHECK(back->evidence == json::object());
  CHECK(back->ranks.empty());
  std::size_t refused = 0;
  r.kind = "meltdown";
  CHECK(scout::sql::to_verdicts({scout::sql::to_row(v), r}, &refused).size() == 1);
  CHECK(refused == 1);
}

TEST_CASE("evidence class: one table; drainable kinds are the ones root can check") {
  using scout::c3::EvidenceClass;
  CHECK(scout::c3::evidence_class(VerdictKind::kSdc) == EvidenceClass::kReproduce);
  for (auto k : {VerdictKind::kHang, VerdictKind::kStall, VerdictKind::kCrash, VerdictKind::kDivergence,
                 VerdictKind::kGpuHang, VerdictKind::kGpuHealth})
    CHECK(scout::c3::evidence_class(k) == EvidenceClass::kSuspect);
  for (auto k : scout::c3::kAllVerdictKinds)
    CHECK(scout::c3::drainable(k) == (scout::c3::evidence_class(k) != EvidenceClass::kNone));
}

TEST_CASE("epilog: nothing attributed to this node keeps it, without asking root's checks") {
  FakeChecks c;
  gate::Settings s;
  std::vector<Verdict> vs = {verdict(VerdictKind::kStall, {"n2"}),
                             verdict(VerdictKind::kStall, {"n1"}, "7.0.o0.1.2", VerdictStatus::kInconclusive),
                             verdict(VerdictKind::kStraggler, {"n1"}, "7.0.o0.1.3")};
  auto d = gate::decide_epilog(vs, "7", "n1", s, c);
  CHECK(d.decision == "keep");
  CHECK(d.reason == "no attributed stall/crash/sdc/gpu_hang/gpu_health verdict on this node");
  CHECK(d.evidence.is_null());
  CHECK(d.action == gate::Action::kNone);
  CHECK(c.node_checks + c.reproduces + c.blames == 0);
  // A kind the site left out of drain_kinds is not acted on.
  s.drain_kinds = {"sdc"};
  d = gate::decide_epilog({verdict(VerdictKind::kStall, {"n1"})}, "7", "n1", s, c);
  CHECK(d.decision == "keep");
  CHECK(c.node_checks == 0);
}

TEST_CASE("epilog: an sdc root reproduces drains and is confirmed; one it does not is kept, unconfirmed") {
  gate::Settings s;
  Verdict v = verdict(VerdictKind::kSdc, {"n1"});
  v.evidence = replay_evidence();
  FakeChecks c;
  auto d = gate::decide_epilog({v}, "7", "n1", s, c);
  CHECK(d.decision == "drain");
  CHECK(d.action == gate::Action::kDrain);
  CHECK(d.node_reason == "scout: sdc rank 4 job 7");
  CHECK(d.reason == "scout: sdc rank 4 job 7; core 3 disagrees");
  CHECK(c.reproduces == 1);
  CHECK(c.node_checks == 0);  // reproduced as named: no node check needed
  REQUIRE(d.confirmations.size() == 1);
  CHECK(d.confirmations[0] == std::pair<std::string, std::string>{"7.0.o0.1.1", "confirmed"});
  CHECK(d.evidence["verdicts"][0]["class"] == "reproduce");
  CHECK(d.evidence["confirmed"] == json::array({"7.0.o0.1.1"}));

  FakeChecks clean;
  clean.reproduce_result = "pass";
  d = gate::decide_epilog({v}, "7", "n1", s, clean);
  CHECK(d.decision == "keep");
  CHECK(d.reason == "scout: sdc rank 4 job 7 not reproduced; kept: root did not reproduce it");
  CHECK(d.confirmations[0].second == "unconfirmed");
  CHECK(d.evidence["unconfirmed"] == json::array({"7.0.o0.1.1"}));
}

TEST_CASE("epilog: an sdc naming nothing root can re-run falls back to root's node check") {
  gate::Settings s;
  Verdict v = verdict(VerdictKind::kSdc, {"n1"});
  v.evidence = {{"source", "output"}, {"communicator", "world"}};
  FakeChecks failing;
  failing.node_fails = true;
  auto d = gate::decide_epilog({v}, "7", "n1", s, failing);
  CHECK(d.decision == "drain");
  CHECK(d.reason.find("reproduced by root's node check: kernel_log: machine check") != std::string::npos);
  CHECK(failing.reproduces == 0);
  CHECK(d.evidence.contains("node_check"));
  FakeChecks unavailable;  // names a device root cannot run: the same fallback
  unavailable.reproduce_result = "unavailable";
  v.evidence = replay_evidence();
  d = gate::decide_epilog({v}, "7", "n1", s, unavailable);
  CHECK(d.decision == "keep");
  CHECK(d.evidence["verdicts"][0]["check"]["detail"] ==
        "not reproduced: nothing to re-run as named; root's node check passed");
  CHECK(unavailable.node_checks == 1);
}

TEST_CASE("epilog: a suspect kind drains on root's failed node check or on blame, else it is suspect") {
  gate::Settings s;
  const Verdict v = verdict(VerdictKind::kStall, {"n3"});
  FakeChecks failing;
  failing.node_fails = true;
  auto d = gate::decide_epilog({v}, "7", "n3", s, failing);
  CHECK(d.decision == "drain");
  CHECK(d.reason == "scout: stall rank 4 job 7; root's node check failed: kernel_log: machine check");
  CHECK(d.confirmations.empty());  // only reproduced evidence is confirmed
  CHECK(failing.blame_kinds == std::vector<std::string>{"stall", "crash", "gpu_hang", "gpu_health"});

  FakeChecks blamed;
  blamed.blamed = {3, 2};
  d = gate::decide_epilog({v}, "7", "n3", s, blamed);
  CHECK(d.decision == "drain");
  CHECK(d.reason == "scout: stall rank 4 job 7; blamed by 3 job(s) of 2 user(s) in 7 days (drain at 3 of 2)");
  CHECK(d.evidence["blame"]["jobs"] == 3);

  FakeChecks once;
  once.blamed = {3, 1};  // enough jobs, one user: not enough
  d = gate::decide_epilog({v, verdict(VerdictKind::kCrash, {"n3"}, "7.0.o0.1.2")}, "7", "n3", s, once);
  CHECK(d.decision == "suspect");
  CHECK(d.action == gate::Action::kNone);
  CHECK(d.reason == "scout: stall rank 4 job 7 (+1 more); node suspect: root's node check passed and 3 job(s) of 1 "
                    "user(s) blamed it in 7 days (drain needs 3 of 2)");
  CHECK(once.node_checks == 1);  // asked once for both verdicts
  CHECK(once.blames == 1);
}

TEST_CASE("epilog: gating off and dry runs decide the same and drain nothing") {
  gate::Settings s;
  s.gate = false;
  FakeChecks c;
  c.node_fails = true;
  auto d = gate::decide_epilog({verdict(VerdictKind::kCrash, {"n2"})}, "7", "n2", s, c);
  CHECK(d.decision == "keep");
  CHECK(d.would_act);
  CHECK(d.action == gate::Action::kNone);
  CHECK(d.reason.find("[gating off]") != std::string::npos);
  s.gate = true;
  s.dry_run = true;
  d = gate::decide_epilog({verdict(VerdictKind::kCrash, {"n2"})}, "7", "n2", s, c);
  CHECK(d.reason.find("[dry run]") != std::string::npos);
  CHECK(d.action == gate::Action::kNone);
}

TEST_CASE("prolog: refuses a node with an open confirmed verdict, admits it otherwise") {
  gate::Settings s;
  CHECK(gate::decide_prolog({}, "n2", s).decision.empty());
  Verdict a = verdict(VerdictKind::kSdc, {"n2"});
  Verdict b = verdict(VerdictKind::kSdc, {"n2"}, "8.0.o0.1.1");
  b.id = 9;
  b.job = "8";
  auto d = gate::decide_prolog({a, b}, "n2", s);
  CHECK(d.decision == "refuse");
  CHECK(d.action == gate::Action::kDrain);
  CHECK(d.node_reason == "scout: open sdc verdict 9 job 8 (+1 more); scoutctl clear n2 after repair");
  s.dry_run = true;
  d = gate::decide_prolog({a}, "n2", s);
  CHECK(d.decision == "keep");
  CHECK(d.would_act);
  CHECK(d.reason.find("[dry run]") != std::string::npos);
}

TEST_CASE("prolog: the service's rows count only when confirmed for this node, of a prolog kind, not twice") {
  gate::Settings s;
  Verdict local = verdict(VerdictKind::kSdc, {"n2"});
  Verdict same = local;  // the service's copy of the same verdict
  same.confirmation = "confirmed";
  Verdict other = verdict(VerdictKind::kSdc, {"n2"}, "8.0.o0.1.1");
  other.confirmation = "confirmed";
  Verdict unconfirmed = verdict(VerdictKind::kSdc, {"n2"}, "8.0.o0.1.2");
  unconfirmed.confirmation = "unconfirmed";
  Verdict stall = verdict(VerdictKind::kStall, {"n2"}, "8.0.o0.1.3");
  stall.confirmation = "confirmed";
  Verdict elsewhere = verdict(VerdictKind::kSdc, {"n5"}, "8.0.o0.1.4");
  elsewhere.confirmation = "confirmed";
  auto open = gate::prolog_open({local}, {same, other, unconfirmed, stall, elsewhere}, "n2", s);
  REQUIRE(open.size() == 2);
  CHECK(*open[1].key == "8.0.o0.1.1");
}

TEST_CASE("epilog: the service's verdicts join the job's only from this job and within its allocation") {
  Verdict local = verdict(VerdictKind::kStall, {"n3"});
  Verdict dup = local;
  Verdict forwarded = verdict(VerdictKind::kCrash, {"n2"}, "7.0.o1.5.1");
  Verdict foreign_job = verdict(VerdictKind::kCrash, {"n2"}, "70.0.o1.5.1");
  Verdict outside = verdict(VerdictKind::kCrash, {"n2", "n9"}, "7.0.o1.5.2");
  Verdict keyless = verdict(VerdictKind::kCrash, {"n2"}, "");
  auto all = gate::job_view({local}, {dup, forwarded, foreign_job, outside, keyless}, "7", {"n1", "n2", "n3"});
  REQUIRE(all.size() == 2);
  CHECK(*all[1].key == "7.0.o1.5.1");
}

TEST_CASE("replay target: read only from a replay verdict's well-typed fields") {
  CHECK(gate::replay_target(replay_evidence()));
  json e = replay_evidence();
  e["core"] = "3";
  CHECK_FALSE(gate::replay_target(e));
  e = replay_evidence();
  e["core"] = -1;
  CHECK_FALSE(gate::replay_target(e));
  e = replay_evidence();
  e["source"] = "output";
  CHECK_FALSE(gate::replay_target(e));
  CHECK_FALSE(gate::replay_target(json::array()));
}
