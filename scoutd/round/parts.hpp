// The participants besides the incidents desk (see participant.hpp), in
// the order the daemon runs them. Each is built only where its concern is
// on (replay, checkpoints, GPU health and the learner are options).
#pragma once

#include <memory>

#include "scoutd/round/incidents.hpp"
#include "scoutd/round/participant.hpp"

namespace scout::sql {
class Ledger;
}

namespace scout::scoutd {

// The learner's telemetry anomaly flags and its own learn round.
std::unique_ptr<Participant> make_learner(RoundContext& ctx, Incidents& desk);
// NVML health findings of the node's GPUs (null when NVML is absent).
std::unique_ptr<Participant> make_gpu_health(RoundContext& ctx, Incidents& desk);
// Stops, stalls, hangs, deadlocks, crashes (detect/progress_detector).
std::unique_ptr<Participant> make_progress(RoundContext& ctx, Incidents& desk);
// scoutctl set: settings retuned at a round boundary (tune_part.cpp).
std::unique_ptr<Participant> make_tuning(RoundContext& ctx);
// Collective-output signatures compared across ranks (detect/output_tracker).
std::unique_ptr<Participant> make_outputs(RoundContext& ctx, Incidents& desk);
// Compute, communicator and late-sender stragglers (detect/straggler_detector, late_sender).
std::unique_ptr<Participant> make_stragglers(RoundContext& ctx, Incidents& desk);
// Replay cycles: coordinated at the deciding observer, run on every node.
std::unique_ptr<Participant> make_replay(RoundContext& ctx, Incidents& desk, sql::Ledger& ledger);
// Checkpoint certification (the deciding observer watches the directory).
std::unique_ptr<Participant> make_checkpoints(RoundContext& ctx, sql::Ledger& ledger);

}  // namespace scout::scoutd
