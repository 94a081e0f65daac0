// Progress and crashes as a round participant (see parts.hpp): the trigger
// carries the longest stall, the waiting ranks, deaths and direct evidence
// (stopped ranks, end events); the deciding observer asks for the evidence
// when any of them is set and names what the progress detector finds.
#include <map>
#include <string>

#include <fmt/format.h>

#include "libc3/signature.hpp"
#include "scoutd/detect/call_groups.hpp"
#include "scoutd/detect/progress_detector.hpp"
#include "scoutd/detect/stack_classes.hpp"
#include "scoutd/round/parts.hpp"

namespace scout::scoutd {

namespace {

// A hang, stall or deadlock carries where every rank is: the stack-trace
// classes of the ranks whose stacks their scoutds took during the stall,
// merged up the gather's tree (StackTree).
// A divergence's groups (which ranks are in which collective) get their
// calls and call sites from the same classes, and the sentence.
// A hang, stall or deadlock states where every rank is the same way (its
// groups by what each is in: state_groups).
std::vector<VerdictDraft> with_stacks(std::vector<VerdictDraft> drafts, const StackTree& stacks,
                                      const std::vector<RankEvidence>& ranks, std::uint64_t world) {
  nlohmann::json classes, groups;
  std::size_t dropped = 0;
  bool taken = false;
  for (auto& d : drafts) {
    if (d.kind != c3::VerdictKind::kHang && d.kind != c3::VerdictKind::kStall &&
        d.kind != c3::VerdictKind::kDeadlock && d.kind != c3::VerdictKind::kDivergence)
      continue;
    if (!taken) classes = stacks.classes(), groups = state_groups(ranks, &dropped), taken = true;
    if (!classes.is_null()) d.evidence["stacks"] = classes;
    if (!d.evidence.contains("groups")) {
      d.evidence["groups"] = groups;
      if (dropped) d.evidence["groups_dropped"] = dropped;
    }
    describe_groups(d.evidence, &stacks, world);
  }
  return drafts;
}

class Progress final : public Participant {
 public:
  Progress(RoundContext& ctx, Incidents& desk) : ctx_(ctx), desk_(desk) {
    opt_.stall_threshold_s = ctx.cfg.stall_threshold_s;
    // Under Slurm, a step that is cancelled (its srun killed, scancel) has
    // every task SIGKILLed by each node's slurmstepd, spread over a moment,
    // and its companion stopped: a death without a fatal-signal record is
    // named only once the other ranks outlived it by a second. Elsewhere (the
    // launcher kills the job only after a rank died) it is named at once.
    opt_.death_confirm_s = ctx.cfg.slurm ? 1.0 : 0.0;
  }

  void add_trigger(wire::Trigger& t) override {
    const LocalSummary& s = ctx_.summary;
    t.max_stall_s = s.max_stall_s;
    t.waiting = s.waiting;
    t.attached = s.attached;
    t.finalized = s.finalized;
    t.deaths = s.unreported_deaths;
    t.min_seq = s.min_seq;
    t.max_seq = s.max_seq;
    t.suspects += (s.max_stopped_s >= ctx_.tun.stall_threshold_s ? 1u : 0u) + s.ended;
  }

  bool decide_trigger(const TriggerIn& in, wire::Down&) override {
    const auto& t = in.t;
    // Progress resumed everywhere: open progress incidents are resolved.
    if (in.decoded && t.attached > 0 && t.max_stall_s < ctx_.tun.stall_threshold_s && t.deaths == 0)
      desk_.progress_resumed();
    return (t.max_stall_s >= ctx_.tun.stall_threshold_s && t.waiting > 0) || t.deaths > 0 || t.suspects > 0;
  }

  // The ranks' stacks leave their evidence for the section merged in the
  // tree: the deciding observer receives classes, not every rank's frames.
  void add_gather(wire::Gather& g) override {
    dead_.clear();
    for (auto& e : g.ranks) {
      if (e.attached && !e.alive) dead_.push_back(e.rank);
      g.stacks.add(e.rank, e.stack, e.stack_error);
      e.stack.clear();
      e.stack_error.clear();
    }
    g.stacks.bound();
  }

  void decide_gather(const wire::Gather& g, wire::Down& down) override {
    opt_.stall_threshold_s = ctx_.tun.stall_threshold_s;  // scoutctl set may have changed it
    opt_.stopping = ctx_.stopping && ctx_.stopping();
    bool deaths_pending = false;
    if (auto c = detect_crash(g.ranks, opt_, &deaths_pending)) desk_.draft(*c);
    if (deaths_pending) down.deaths_pending = true;  // the deaths stay unreported: gathered again
    else desk_.draft_all(await_stacks(with_stacks(detect_progress(g.ranks, opt_), g.stacks, g.ranks, world_identity())));
  }

  void gather_done(bool complete, const wire::Down& down) override {
    if (complete && !down.deaths_pending) ctx_.ranks->mark_deaths_reported(dead_);
  }

 private:
  // A hang, deadlock or divergence whose groups' stacks are still being
  // taken (their scoutds trace a stalled rank from half the threshold on,
  // one rank after another: on a loaded node the verdict can come first),
  // a group's first rank's or any listed rank's (`stacks_missing`), waits
  // for them, gathered again each period, at most kStackWaitS from when it
  // was first found: its sentence then names every call's line, and its
  // classes hold every rank.
  // A stall does not wait (an operator's drain does not need the line).
  static constexpr double kStackWaitS = 2.0;
  std::vector<VerdictDraft> await_stacks(std::vector<VerdictDraft> drafts) {
    if (!ctx_.cfg.stacks || !ctx_.now) return drafts;
    const double now = ctx_.now();
    std::vector<VerdictDraft> ready;
    std::map<std::string, double> still;
    for (auto& d : drafts) {
      bool missing = false;
      if (d.kind == c3::VerdictKind::kHang || d.kind == c3::VerdictKind::kDeadlock ||
          d.kind == c3::VerdictKind::kDivergence)
        if (const auto gs = d.evidence.find("groups"); gs != d.evidence.end() && gs->is_array())
          for (auto& g : *gs)
            missing |= g.is_object() && (g.value("stack_error", std::string()) == "no stack taken" ||
                                         g.value("stacks_missing", std::size_t{0}) > 0);
      if (missing) {
        const auto it = awaiting_.find(d.key);
        const double since = it == awaiting_.end() ? now : it->second;
        if (now - since < kStackWaitS) {
          still[d.key] = since;
          continue;
        }
      }
      ready.push_back(std::move(d));
    }
    awaiting_ = std::move(still);
    return ready;
  }
  std::map<std::string, double> awaiting_;  // draft key -> when first found without its stacks

  // MPI_COMM_WORLD's identity for this job's size (the step's ranks; under
  // Slurm the observers' rank ranges are not known ahead).
  std::uint64_t world_identity() {
    const int size = ctx_.cfg.ranks;
    if (size != world_size_) world_size_ = size, world_id_ = c3::mpi_world_identity(size);
    return world_id_;
  }
  int world_size_ = -1;
  std::uint64_t world_id_ = 0;

  RoundContext& ctx_;
  Incidents& desk_;
  DetectorOptions opt_;
  std::vector<int> dead_;  // this observer's dead ranks in the last gather
};

}  // namespace

std::unique_ptr<Participant> make_progress(RoundContext& ctx, Incidents& desk) {
  return std::make_unique<Progress>(ctx, desk);
}

}  // namespace scout::scoutd
