// Replay as a round participant (see parts.hpp): every node runs replay
// cycles on its idle cores (replay/); the deciding observer starts a cycle
// (periodically, when asked with `scoutctl replay`, or after a compute
// straggler was confirmed), collects the reports from gathers, asks a
// disagreeing device to re-run, and names what stays in the minority.
#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "replay/runner.hpp"
#include "scoutd/beside/replay_coordinator.hpp"
#include "scoutd/round/parts.hpp"
#include "sql/ledger.hpp"

namespace scout::scoutd {

namespace {

class Replay final : public Participant {
 public:
  Replay(RoundContext& ctx, Incidents& desk, sql::Ledger& ledger)
      : ctx_(ctx),
        desk_(desk),
        ledger_(ledger),
        coordinator_(CoordinatorOptions{ctx.cfg.replay_interval_s, ctx.cfg.replay_reruns, ctx.cfg.replay_timeout_s}) {
    const auto& cfg = ctx.cfg;
    replay::ReplayOptions ro;
    ro.cores = cfg.replay_cores;
    for (auto& n : cfg.replay_recipes)
      if (auto r = replay::recipe_from_name(n)) ro.recipes.push_back(*r);
    ro.budget = cfg.replay_budget;
    ro.idle_priority = cfg.replay_sched == "idle";
    replay::FaultInjector faults;
#ifdef SCOUT_FAULT_INJECTION
    if (const char* f = std::getenv("SCOUT_REPLAY_FAULT"); f && *f) {
      try {
        faults = replay::FaultInjector(replay::parse_fault_specs(f));
        ctx.log(fmt::format("test fault injection in replay: {}", f));
      } catch (const std::exception& e) {
        ctx.log(fmt::format("{}; no fault injected", e.what()));
      }
    }
#endif
    runner_ = std::make_unique<replay::ReplayRunner>(ctx.ranks->node(), ro, std::move(faults));
  }

  void add_trigger(wire::Trigger& t) override {
    if (runner_->budget() != ctx_.tun.replay_budget) runner_->set_budget(ctx_.tun.replay_budget);  // scoutctl set
    t.replay_pending = static_cast<std::uint32_t>(runner_->pending());
    t.replay_demand = ctx_.replay_demand.exchange(false) ? 1u : 0u;
  }

  bool decide_trigger(const TriggerIn& in, wire::Down& down) override {
    const bool straggler = ctx_.compute_straggler_confirmed;
    if (auto id = coordinator_.want_start(ctx_.now(), in.t.replay_demand != 0 || straggler)) {
      down.replay_start = *id;
      ctx_.log(fmt::format("replay cycle {} starts{}", *id,
                           in.t.replay_demand ? " (asked for)" : straggler ? " (compute straggler)" : ""));
      ctx_.compute_straggler_confirmed = false;
    }
    evaluate(down);  // decisions that waited past their deadline
    return in.t.replay_pending > 0;  // reports ride on a gather
  }

  void add_gather(wire::Gather& g) override {
    reports_ = runner_->take_finished();
    for (auto& rep : reports_) g.replay.push_back({ctx_.me, rep});
  }

  void decide_gather(const wire::Gather& g, wire::Down& down) override {
    for (auto& r : g.replay) coordinator_.on_report(r.observer, r.report);
    node_ranks_.clear();
    for (auto& e : g.ranks) node_ranks_[e.node].push_back(e.rank);
    evaluate(down);
  }

  void apply_down(const wire::Down& down) override {
    if (down.replay_start) {
      runner_->start_cycle(*down.replay_start);
      coordinator_.observed_start(*down.replay_start, ctx_.now());  // for a later take-over
    }
    for (auto& r : down.replay_rerun)
      if (r.observer == ctx_.me) runner_->rerun(r.cycle, r.device, r.recipe, r.times);
  }

  void gather_done(bool complete, const wire::Down& down) override {
    // Reports the decision did not take (lost, or deaths still pending) go again.
    if (!complete || down.deaths_pending) runner_->put_back(std::move(reports_));
    reports_.clear();
  }

 private:
  std::vector<int> ranks_of_observer(int observer) {
    if (observer < 0 || observer >= static_cast<int>(ctx_.observers.size())) return {};
    const auto& o = ctx_.observers[static_cast<std::size_t>(observer)];
    std::vector<int> out;
    for (int r = o.first_rank; r <= o.last_rank; ++r) out.push_back(r);
    if (out.empty() && node_ranks_.count(o.node)) out = node_ranks_[o.node];
    return out;
  }

  void evaluate(wire::Down& down) {
    std::set<int> live(ctx_.tree->alive().begin(), ctx_.tree->alive().end());
    auto step = coordinator_.evaluate(ctx_.now(), live, sql::now_unix_ms());
    for (auto& r : step.reruns) {
      down.replay_rerun.push_back({r.observer, r.cycle, r.device, r.recipe, r.times});
      ctx_.log(fmt::format("replay cycle {}: {} {} {} disagrees with the majority; re-running it {} times", r.cycle,
                           ctx_.observers[static_cast<std::size_t>(r.observer)].node, r.recipe, r.device, r.times));
    }
    for (std::size_t i = 0; i < step.verdicts.size(); ++i) {
      auto& d = step.verdicts[i];
      d.ranks = ranks_of_observer(step.verdict_observers[i]);
      desk_.propose(d);
    }
    if (step.cycle_done) record_cycle(step.cycle_done->first, step.cycle_done->second);
  }

  void record_cycle(long id, const nlohmann::json& rec) {
    sql::ReplayCycleRow row;
    row.job_id = ctx_.cfg.job_id;
    row.cycle = id;
    row.started_ms = rec.value("started_ms", std::int64_t{0});
    row.finished_ms = rec.value("finished_ms", std::int64_t{0});
    row.observers = rec.value("observers", std::int64_t{0});
    row.expected = rec.value("expected", std::int64_t{0});
    row.devices = rec.value("devices", std::int64_t{0});
    row.outcome = rec.value("outcome", "incomplete");
    row.cpu_s = rec.value("cpu_s", 0.0);
    row.detail = rec.value("detail", nlohmann::json::object()).dump();
    try {
      ledger_.insert_replay_cycle(row);
    } catch (const std::exception& e) {
      ctx_.warn(fmt::format("ledger: replay cycle {} not recorded: {}", id, e.what()));
    }
    ctx_.log(fmt::format("replay cycle {}: {} ({} of {} nodes, {} devices, {:.3f} CPU s)", id, row.outcome,
                         row.observers, row.expected, row.devices, row.cpu_s));
  }

  RoundContext& ctx_;
  Incidents& desk_;
  sql::Ledger& ledger_;
  ReplayCoordinator coordinator_;  // used at the deciding observer
  std::unique_ptr<replay::ReplayRunner> runner_;  // this node's replay thread
  std::vector<replay::Report> reports_;           // sent in this gather
  std::map<std::string, std::vector<int>> node_ranks_;  // from the last gather
};

}  // namespace

std::unique_ptr<Participant> make_replay(RoundContext& ctx, Incidents& desk, sql::Ledger& ledger) {
  return std::make_unique<Replay>(ctx, desk, ledger);
}

}  // namespace scout::scoutd
