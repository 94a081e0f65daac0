// A seed swarm: each seed draws one simulated run of scoutd's round engine
// (engine_sim.hpp) with faults of the job and of the scoutds at random:
// how many scoutds and ranks, a rank stopped, crashed or slowed (or none),
// and up to four scoutd faults (a crash, a freeze, a partition of a minority
// that heals, slow links, message loss). Every run is checked on every
// event (run_checker.hpp). `make check` runs a few seeds
// (tests/unit/test_engine_sim.cpp), `make bench` many (`scout-sim --swarm`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scout::sim {

struct SwarmRun {
  std::uint64_t seed = 0;
  std::string scenario;                 // what was drawn, in words
  std::vector<std::string> violations;  // the checker's
  std::size_t checks = 0, verdicts = 0;
  bool fault_named = true;  // a stop or crash with no scoutd fault: named by the end
};

// Which scoutd faults a run may draw: all of them, or those the round
// engine keeps every invariant under today (crashes and slow links; see
// docs/scale.md for what the others still break).
enum class SwarmFaults { kAll, kCrashesAndSlowLinks };

// One run of `seed`, `seconds` of virtual time.
SwarmRun swarm_run(std::uint64_t seed, double seconds = 45, SwarmFaults faults = SwarmFaults::kAll);

}  // namespace scout::sim
