// The round engine: one period of scoutd's rounds as a sequence of rounds
// the caller runs (scoutd with the blocking TreeRound::run over MPI; the
// simulator with TreeRound's events over a simulated network), the
// participants' list run at each step. A period is a trigger round and,
// when the deciding observer asks for it, a gather round:
//
//   auto next = engine.begin_period();
//   while (next) next = engine.finished(tree.run(next->up, next->combine, next->decide));
//   if (!engine.go_on()) stop;
//
// The engine owns the participants (the incidents desk first); it encodes
// and decodes the messages and runs the participants' steps in order; it
// decides nothing itself.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "scoutd/round/incidents.hpp"
#include "scoutd/round/participant.hpp"

namespace scout::scoutd {

class RoundEngine {
 public:
  // A round to run: what this observer sends up, how children are merged,
  // and (at the deciding observer) what is decided.
  struct Round {
    c3::Bytes up;
    c3::TreeRound::Combine combine;
    c3::TreeRound::Decide decide;
  };

  RoundEngine(RoundContext& ctx, std::unique_ptr<Incidents> desk);
  ~RoundEngine();
  Incidents& desk() noexcept { return *desk_; }
  // Participants run in the order they are added, after the desk.
  void add(std::unique_ptr<Participant> p);

  // The period's first round (the trigger).
  Round begin_period();
  // The result of the round last begun: the period's next round, or nullopt
  // when the period is over.
  std::optional<Round> finished(const c3::RoundResult& r);
  // After a period: false when the observers agreed to stop (or this one is
  // stopping and has no deciding observer to agree with).
  bool go_on() const noexcept { return go_on_; }
  // Losses and returns of observers, after any round (the learner's too).
  void note(const c3::RoundResult& r);
  // `scoutctl status`: each participant adds its fields to `base`.
  void status(nlohmann::json& base) const;

 private:
  wire::Bytes decide_trigger(const wire::Bytes& acc, const std::vector<int>& lost);
  wire::Bytes decide_gather(const wire::Bytes& acc);
  void apply_down(const wire::Down& down);
  wire::Down decode(const wire::Bytes& msg);
  void end_period();

  RoundContext& ctx_;
  std::unique_ptr<Incidents> desk_;
  std::vector<std::unique_ptr<Participant>> parts_;  // besides the desk
  std::vector<Participant*> order_;                  // the desk, then the others
  enum class Phase { kIdle, kTrigger, kGather } phase_ = Phase::kIdle;
  wire::Down down_;              // the trigger round's decision
  bool trigger_complete_ = false;
  bool after_commit_pending_ = false;  // the trigger's commits waited for the gather's books
  bool go_on_ = true;
};

}  // namespace scout::scoutd
