// Replay: recipes are deterministic and see single bit flips; the fault
// setting is parsed strictly; the consensus finds the dissenting device,
// confirms it by re-runs (sdc / transient) and refuses to guess on a tie.
#include <doctest/doctest.h>

#include <sched.h>

#include <cmath>
#include <memory>
#include <thread>

#include <csignal>
#include <unistd.h>

#include "replay/child_run.hpp"
#include "replay/recipes.hpp"
#include "replay/runner.hpp"
#include "scoutd/beside/replay_coordinator.hpp"

using namespace scout::replay;
using namespace scout::scoutd;
namespace c3 = scout::c3;

TEST_CASE("every recipe is deterministic for a seed and sees a flipped result bit") {
  for (Recipe r : kAllRecipes) {
    CAPTURE(recipe_name(r));
    auto a = run_recipe(r, 42), b = run_recipe(r, 42), c = run_recipe(r, 43);
    CHECK(a.signature == b.signature);
    CHECK(a.signature != c.signature);
    CHECK(a.elapsed_ns > 0);
    CHECK(a.errors == 0);
    for (int bit : {0, 17, 63, 1000}) CHECK(run_recipe(r, 42, 1, bit).signature != a.signature);
    CHECK(recipe_from_name(recipe_name(r)) == r);
  }
  CHECK_FALSE(recipe_from_name("gemm_f16").has_value());
}

TEST_CASE("the same recipe on two different cores gives the same bits") {
  auto cpus = allowed_cpus();
  REQUIRE(!cpus.empty());
  std::uint64_t sig[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    const int core = cpus[static_cast<std::size_t>(k) % cpus.size()];
    std::thread t([&, core] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(core, &set);
      sched_setaffinity(0, sizeof set, &set);
      sig[k] = run_recipe(Recipe::kGemmF64, 7).signature ^ run_recipe(Recipe::kTranscendental, 7).signature;
    });
    t.join();
  }
  CHECK(sig[0] == sig[1]);
}

TEST_CASE("our transcendental functions are accurate") {
  for (double x = -30; x <= 30; x += 0.37) {
    CHECK(std::fabs(det_exp(x) - std::exp(x)) <= 1e-13 * std::exp(x));
    CHECK(std::fabs(det_sin(x) - std::sin(x)) <= 1e-12);
    if (x > 0) CHECK(std::fabs(det_log(x) - std::log(x)) <= 1e-14 * std::max(1.0, std::fabs(std::log(x))));
  }
  CHECK(std::isnan(det_log(-1)));
  CHECK(det_exp(-800) == 0.0);
}

TEST_CASE("SCOUT_REPLAY_FAULT is parsed strictly") {
  auto f = parse_fault_specs("node=n2+n3,core=*,recipe=int_bit,bit=5,mode=once,after=3;node=n1,bit=2");
  REQUIRE(f.size() == 2);
  CHECK(f[0].nodes == std::vector<std::string>{"n2", "n3"});
  CHECK(f[0].core == -1);
  CHECK(f[0].recipe == Recipe::kIntBit);
  CHECK(f[0].once);
  CHECK(f[0].after_cycle == 3);
  CHECK_FALSE(f[1].recipe.has_value());
  auto msg = [](const char* s) {
    try {
      parse_fault_specs(s);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(msg("core=1,bit=2").find("node= missing") != std::string::npos);
  CHECK(msg("node=n1").find("bit= missing") != std::string::npos);
  CHECK(msg("node=n1,bit=x").find("bit=x is not a number") != std::string::npos);
  CHECK(msg("node=n1,bit=1,recipe=foo").find("unknown recipe 'foo'") != std::string::npos);
  CHECK(msg("node=n1,bit=1,mode=twice").find("mode=twice") != std::string::npos);
  CHECK(msg("node=n1,bit=1,colour=red").find("unknown key 'colour'") != std::string::npos);
  CHECK(msg("node=n1,bit=1,oops").find("expected node=NAME") != std::string::npos);
}

TEST_CASE("fault injection: node, core, recipe, once, after") {
  FaultInjector f(parse_fault_specs("node=n2,core=1,recipe=gemm_f64,bit=17,mode=once,after=2"));
  CHECK(f.bit_for("n2", 1, Recipe::kGemmF64, 1) == -1);  // before cycle 2
  CHECK(f.bit_for("n1", 1, Recipe::kGemmF64, 2) == -1);
  CHECK(f.bit_for("n2", 0, Recipe::kGemmF64, 2) == -1);
  CHECK(f.bit_for("n2", 1, Recipe::kGemmF32, 2) == -1);
  CHECK(f.bit_for("n2", 1, Recipe::kGemmF64, 2) == 17);
  CHECK(f.bit_for("n2", 1, Recipe::kGemmF64, 3) == -1);  // once
  FaultInjector r(parse_fault_specs("node=n2,bit=4"));
  CHECK(r.bit_for("n2", 5, Recipe::kMemMarch, 9) == 4);
  CHECK(r.bit_for("n2", 5, Recipe::kMemMarch, 10) == 4);
}

namespace {
// Reports of `nodes` nodes x 2 cores for one recipe; `bad` maps node index
// -> signature used by both of its cores (or one core when core >= 0).
Report report(int node, long cycle, std::uint64_t sig0, std::uint64_t sig1, const std::string& cls = "cpuA") {
  Report r;
  r.cycle = cycle;
  r.node = "n" + std::to_string(node + 1);
  r.cpu_class = cls;
  r.results = {{"cpu0", 0, "gemm_f64", sig0, 1, 1}, {"cpu1", 1, "gemm_f64", sig1, 1, 1}};
  r.cpu_s = 0.01;
  r.started_unix_ms = 1000 + static_cast<std::uint64_t>(node);
  return r;
}
}  // namespace

TEST_CASE("compare_cycle: one dissenting core, a tie, unpaired classes") {
  std::map<int, Report> reps;
  for (int n = 0; n < 4; ++n) reps[n] = report(n, 1, 0xAA, n == 1 ? 0xBB : 0xAA);
  auto c = compare_cycle(reps);
  CHECK(c.devices == 8);
  REQUIRE(c.dissents.size() == 1);
  CHECK(c.dissents[0].node == "n2");
  CHECK(c.dissents[0].core == 1);
  CHECK(c.dissents[0].agree == 7);
  CHECK(c.dissents[0].majority == 0xAA);
  CHECK(c.no_majority.empty());

  for (int n = 0; n < 4; ++n) reps[n] = report(n, 1, n >= 2 ? 0xBB : 0xAA, n >= 2 ? 0xBB : 0xAA);
  c = compare_cycle(reps);
  CHECK(c.dissents.empty());
  REQUIRE(c.no_majority.size() == 1);
  CHECK(c.no_majority[0].values.size() == 2);
  CHECK(c.no_majority[0].values[0xAA].size() == 4);

  // Unlike CPUs are never peers: a lone class is unpaired, not a dissent.
  for (int n = 0; n < 4; ++n) reps[n] = report(n, 1, 0xAA, 0xAA);
  reps[3] = report(3, 1, 0xCC, 0xCC, "cpuB");
  Report lone = report(3, 1, 0xCC, 0xCC, "cpuB");
  lone.results.pop_back();
  reps[3] = lone;
  c = compare_cycle(reps);
  CHECK(c.dissents.empty());
  CHECK(c.unpaired == 1);
}

TEST_CASE("coordinator: dissent, re-runs, sdc when it recurs, transient when not") {
  for (bool recurs : {true, false}) {
    CAPTURE(recurs);
    ReplayCoordinator co({0, 2, 100});
    CHECK_FALSE(co.want_start(0, false).has_value());  // on demand only
    auto id = co.want_start(1, true);
    REQUIRE(id == 1);
    CHECK_FALSE(co.want_start(2, true).has_value());  // one at a time
    std::set<int> live = {0, 1, 2, 3};
    for (int n = 0; n < 3; ++n) co.on_report(n, report(n, 1, 0xAA, n == 1 ? 0xBB : 0xAA));
    auto s = co.evaluate(2, live, 5000);
    CHECK(s.reruns.empty());  // waits for observer 3
    co.on_report(3, report(3, 1, 0xAA, 0xAA));
    s = co.evaluate(3, live, 5000);
    REQUIRE(s.reruns.size() == 1);
    CHECK(s.reruns[0].observer == 1);
    CHECK(s.reruns[0].core == 1);
    CHECK(s.reruns[0].times == 2);
    CHECK(s.reruns[0].device == "cpu1");
    CHECK_FALSE(s.cycle_done.has_value());
    Report rr;
    rr.cycle = 1;
    rr.rerun_of = 1;
    rr.rerun_device = "cpu1";
    rr.rerun_recipe = "gemm_f64";
    rr.node = "n2";
    rr.results = {{"cpu1", 1, "gemm_f64", recurs ? 0xBBu : 0xAAu, 1, 1}, {"cpu1", 1, "gemm_f64", 0xAA, 1, 1}};
    co.on_report(1, rr);
    s = co.evaluate(4, live, 6000);
    REQUIRE(s.verdicts.size() == 1);
    CHECK(s.verdicts[0].kind == (recurs ? c3::VerdictKind::kSdc : c3::VerdictKind::kTransient));
    CHECK(s.verdicts[0].status == (recurs ? c3::VerdictStatus::kAttributed : c3::VerdictStatus::kAdvisory));
    CHECK(s.verdicts[0].hosts == std::vector<std::string>{"n2"});
    CHECK(s.verdicts[0].evidence["core"] == 1);
    CHECK(s.verdicts[0].evidence["reruns_differing"] == (recurs ? 1 : 0));
    CHECK(s.verdict_observers[0] == 1);
    REQUIRE(s.cycle_done.has_value());
    CHECK(s.cycle_done->second["outcome"] == "dissent");
    CHECK(s.cycle_done->second["started_ms"] == 1000);
    CHECK_FALSE(co.running());
  }
}

TEST_CASE("coordinator: a clean cycle; a silent node is decided without after the timeout") {
  ReplayCoordinator co({10, 2, 5});
  CHECK_FALSE(co.want_start(0, false).has_value());
  REQUIRE(co.want_start(10, false) == 1);  // periodic
  std::set<int> live = {0, 1, 2};
  co.on_report(0, report(0, 1, 0xAA, 0xAA));
  co.on_report(1, report(1, 1, 0xAA, 0xAA));
  co.on_report(1, report(1, 7, 0xBB, 0xBB));  // foreign cycle: ignored
  CHECK_FALSE(co.evaluate(12, live, 1).cycle_done.has_value());
  auto s = co.evaluate(16, live, 1);
  REQUIRE(s.cycle_done.has_value());
  CHECK(s.cycle_done->second["outcome"] == "incomplete");
  REQUIRE(co.want_start(26, false) == 2);
  for (int n = 0; n < 3; ++n) co.on_report(n, report(n, 2, 0xAA, 0xAA));
  s = co.evaluate(27, live, 2);
  REQUIRE(s.cycle_done.has_value());
  CHECK(s.cycle_done->second["outcome"] == "clean");
  CHECK(s.cycle_done->second["devices"] == 6);
  CHECK(s.verdicts.empty());
}

TEST_CASE("coordinator: a GPU that could not run its recipes makes the cycle not clean") {
  ReplayCoordinator co({10, 2, 5});
  REQUIRE(co.want_start(0, true) == 1);
  std::set<int> live = {0, 1, 2};
  for (int n = 0; n < 3; ++n) {
    Report r = report(n, 1, 0xAA, 0xAA);
    if (n == 2) r.gpu_error = "gpu0: an illegal memory access was encountered";
    co.on_report(n, r);
  }
  auto s = co.evaluate(1, live, 1);
  REQUIRE(s.cycle_done.has_value());
  CHECK(s.cycle_done->second["outcome"] == "gpu_error");  // every CPU agreed; still not clean
  CHECK(s.cycle_done->second["detail"]["gpu_errors"][0]["error"] == "gpu0: an illegal memory access was encountered");
}

TEST_CASE("coordinator: one that takes over continues the cycle numbering and the period") {
  ReplayCoordinator co({10, 2, 5});
  co.observed_start(3, 100);   // the old root started cycle 3 at t=100
  co.observed_start(2, 101);   // an older id changes nothing
  CHECK_FALSE(co.want_start(105, false).has_value());  // not due: the period runs from cycle 3
  REQUIRE(co.want_start(110, false) == 4);
  REQUIRE(co.evaluate(200, {0}, 1).cycle_done.has_value());  // decided without reports
  CHECK(co.want_start(201, true) == 5);
}

TEST_CASE("a tie between two groups is an inconclusive sdc naming nobody") {
  ReplayCoordinator co({0, 2, 100});
  REQUIRE(co.want_start(0, true) == 1);
  std::set<int> live = {0, 1, 2, 3};
  for (int n = 0; n < 4; ++n) co.on_report(n, report(n, 1, n >= 2 ? 0xBB : 0xAA, n >= 2 ? 0xBB : 0xAA));
  auto s = co.evaluate(1, live, 1);
  CHECK(s.reruns.empty());
  REQUIRE(s.verdicts.size() == 1);
  CHECK(s.verdicts[0].kind == c3::VerdictKind::kSdc);
  CHECK(s.verdicts[0].status == c3::VerdictStatus::kInconclusive);
  CHECK(s.verdicts[0].hosts.empty());
  CHECK(s.verdict_observers[0] == -1);
  REQUIRE(s.cycle_done.has_value());
  CHECK(s.cycle_done->second["outcome"] == "dissent");
}

TEST_CASE("reports survive a JSON round trip") {
  Report r = report(2, 5, 0xDEADBEEFCAFEF00Dull, 1);
  nlohmann::json j = r;
  Report b = j.get<Report>();
  CHECK(b.node == "n3");
  CHECK(b.cycle == 5);
  REQUIRE(b.results.size() == 2);
  CHECK(b.results[0].signature == 0xDEADBEEFCAFEF00Dull);
}

TEST_CASE("the runner runs a cycle on each core and re-runs one device") {
  ReplayOptions o;
  o.cores = {allowed_cpus().front()};
  o.recipes = {Recipe::kIntBit, Recipe::kGemmF32};
  o.budget = 1.0;
  o.idle_priority = false;
  ReplayRunner run("n1", o, FaultInjector(parse_fault_specs("node=n1,recipe=int_bit,bit=3")));
  run.start_cycle(1);
  run.start_cycle(1);  // a cycle runs once
  run.rerun(1, "cpu" + std::to_string(o.cores[0]), "gemm_f32", 2);
  std::vector<Report> got;
  for (int i = 0; i < 500 && got.size() < 2; ++i) {
    for (auto& r : run.take_finished()) got.push_back(r);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(got.size() == 2);
  CHECK(got[0].rerun_of == -1);
  REQUIRE(got[0].results.size() == 2);
  CHECK(got[0].results[0].recipe == "int_bit");
  CHECK(got[0].results[0].signature != run_recipe(Recipe::kIntBit, cycle_seed(1) ^ static_cast<std::uint64_t>(Recipe::kIntBit)).signature);
  CHECK(got[0].results[1].signature == run_recipe(Recipe::kGemmF32, cycle_seed(1) ^ static_cast<std::uint64_t>(Recipe::kGemmF32)).signature);
  CHECK(got[1].rerun_of == o.cores[0]);
  REQUIRE(got[1].results.size() == 2);
  CHECK(got[1].results[0].signature == got[0].results[1].signature);
  CHECK_FALSE(run.busy());
}

TEST_CASE("work in a child process: its answer, its deadline, its death") {
  std::string err;
  auto ok = run_in_child([] { return std::string(100000, 'x'); }, 10, err);
  REQUIRE(ok.has_value());
  CHECK(ok->size() == 100000);
  auto t0 = std::chrono::steady_clock::now();
  auto hung = run_in_child([] { for (;;) pause(); return std::string(); }, 0.3, err);
  CHECK_FALSE(hung.has_value());
  CHECK(err.find("deadline of 0 s passed") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  auto crashed = run_in_child([] { std::signal(SIGSEGV, SIG_DFL); raise(SIGSEGV); return std::string(); }, 5, err);
  CHECK_FALSE(crashed.has_value());
  CHECK(err.find("signal 11") != std::string::npos);
}

TEST_CASE("a GPU that exists but cannot be used is a GPU error in the report, not \"no GPU\"") {
  GpuBackend b;
  b.devices = [](std::string& e) { e = "cudaGetDeviceCount: CUDA driver version is insufficient"; return -1; };
  b.run = [](int, std::uint64_t, const std::vector<FaultInjector::GpuFlip>&, const std::string&, std::string&) {
    return std::vector<DeviceResult>{};
  };
  set_gpu_backend(b);
  ReplayOptions o;
  o.cores = {allowed_cpus().front()};
  o.recipes = {Recipe::kIntBit};
  o.budget = 1.0;
  o.idle_priority = false;
  ReplayRunner run("n1", o, FaultInjector{});
  run.start_cycle(1);
  Report got;
  for (int i = 0; i < 500; ++i) {
    auto r = run.take_finished();
    if (!r.empty()) { got = r.front(); break; }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(got.gpu_error.find("cannot be checked: cudaGetDeviceCount: CUDA driver version is insufficient") != std::string::npos);
  set_gpu_backend({});
}

TEST_CASE("GPU SMs take part through the backend: a bad SM is named and re-run") {
  // The backend stands in for a GPU (none here): 4 SMs, SM 3 of node n2's
  // GPU computes gpu_gemm_f64 wrong when a flip is asked for.
  GpuBackend b;
  b.devices = [](std::string&) { return 1; };
  b.run = [](int dev, std::uint64_t seed, const std::vector<FaultInjector::GpuFlip>& flips,
             const std::string& only, std::string&) {
    std::vector<DeviceResult> out;
    for (const char* rec : {"gpu_gemm_f64", "gpu_mma_f16"}) {
      if (!only.empty() && only != rec) continue;
      for (int sm = 0; sm < 4; ++sm) {
        std::uint64_t sig = seed ^ std::hash<std::string>{}(rec);
        for (auto& f : flips)
          if (f.sm == sm && (f.recipe.empty() || f.recipe == rec)) sig ^= 1ull << (f.bit % 64);
        DeviceResult r;
        r.device = "gpu" + std::to_string(dev) + "/sm" + std::to_string(sm);
        r.recipe = rec;
        r.signature = sig;
        r.cls = "FakeGPU";
        r.gpu = dev;
        r.sm = sm;
        out.push_back(r);
      }
    }
    return out;
  };
  set_gpu_backend(b);
  ReplayOptions o;
  o.cores = {allowed_cpus().front()};
  o.recipes = {Recipe::kIntBit};
  o.budget = 1.0;
  o.idle_priority = false;
  auto faults = parse_fault_specs("node=n2,gpu=0,sm=3,recipe=gpu_gemm_f64,bit=9");
  std::map<int, Report> reps;
  std::vector<std::unique_ptr<ReplayRunner>> runners;
  for (int n = 0; n < 3; ++n)
    runners.push_back(std::make_unique<ReplayRunner>("n" + std::to_string(n + 1), o, FaultInjector(faults)));
  auto wait_one = [](ReplayRunner& r) {
    for (int i = 0; i < 500; ++i) {
      auto got = r.take_finished();
      if (!got.empty()) return got.front();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL("no report");
    return Report{};
  };
  ReplayCoordinator co({0, 2, 100});
  REQUIRE(co.want_start(0, true) == 1);
  for (int n = 0; n < 3; ++n) {
    runners[static_cast<std::size_t>(n)]->start_cycle(1);
    Report r = wait_one(*runners[static_cast<std::size_t>(n)]);
    CHECK(r.results.size() == 1 + 8);
    co.on_report(n, r);
  }
  auto s = co.evaluate(1, {0, 1, 2}, 1);
  REQUIRE(s.reruns.size() == 1);
  CHECK(s.reruns[0].device == "gpu0/sm3");
  CHECK(s.reruns[0].recipe == "gpu_gemm_f64");
  CHECK(s.reruns[0].observer == 1);
  runners[1]->rerun(1, "gpu0/sm3", "gpu_gemm_f64", 2);
  Report rr = wait_one(*runners[1]);
  CHECK(rr.results.size() == 2);  // only that SM, twice
  co.on_report(1, rr);
  s = co.evaluate(2, {0, 1, 2}, 2);
  REQUIRE(s.verdicts.size() == 1);
  CHECK(s.verdicts[0].kind == c3::VerdictKind::kSdc);
  CHECK(s.verdicts[0].evidence["device"] == "gpu0/sm3");
  CHECK(s.verdicts[0].evidence["gpu"] == 0);
  CHECK(s.verdicts[0].evidence["sm"] == 3);
  CHECK(s.verdicts[0].evidence["agreeing_devices"] == 11);
  CHECK(s.verdicts[0].evidence["cpu_class"] == "FakeGPU");
  set_gpu_backend({});
}
