// Step detection from the fingerprint history, and the compute/wait split.
#include <doctest/doctest.h>

#include "scoutd/observe/step_timing.hpp"

using namespace scout::scoutd;
using scout::c3::CollEvent;

namespace {
// A training loop: per step `compute_ms` outside, then an allreduce of
// `wait_ms`; every 10th step also a bcast of 1 ms.
std::vector<CollEvent> loop(int steps, double compute_ms, double wait_ms) {
  std::vector<CollEvent> v;
  std::uint64_t t = 1'000'000, seq = 0;
  for (int s = 0; s < steps; ++s) {
    t += static_cast<std::uint64_t>(compute_ms * 1e6);
    v.push_back({++seq, 0xA11, scout::c3::kAllreduce, t, t + static_cast<std::uint64_t>(wait_ms * 1e6)});
    t += static_cast<std::uint64_t>(wait_ms * 1e6);
    if (s % 10 == 9) {
      v.push_back({++seq, 0xBCA, scout::c3::kBcast, t, t + 1'000'000});
      t += 1'000'000;
    }
  }
  return v;
}
}  // namespace

TEST_CASE("the most frequent collective marks the steps; compute and wait are split") {
  auto st = analyse_steps(loop(30, 20, 5));
  CHECK(st.step_fingerprint == 0xA11);
  CHECK(st.steps == 29);
  CHECK(st.step_s == doctest::Approx(0.025).epsilon(0.01));
  CHECK(st.compute_s == doctest::Approx(0.020).epsilon(0.01));
  CHECK(st.wait_s == doctest::Approx(0.005).epsilon(0.01));
}

TEST_CASE("an override picks the step collective by kind") {
  auto st = analyse_steps(loop(40, 2, 1), coll_kind_from_name("bcast"));
  CHECK(st.step_fingerprint == 0xBCA);
  CHECK(st.steps == 3);
  CHECK(st.step_s == doctest::Approx(0.031).epsilon(0.01));
  CHECK(coll_kind_from_name("nonsense") == 0);
}

TEST_CASE("steps across a gap in the history or still in progress are not counted") {
  auto v = loop(10, 10, 1);
  v.erase(v.begin() + 4);  // a collective the observer never saw
  v[v.size() - 2].exit_ns = 0;  // the last allreduce is still inside
  auto st = analyse_steps(v);
  CHECK(st.steps == 6);
  CHECK(analyse_steps({}).steps == 0);
}
