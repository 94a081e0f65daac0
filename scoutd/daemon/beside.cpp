// scoutd's glue to what runs beside the detectors (see daemon.hpp): replay
// cycles (coordinated at the deciding observer, run on every node) and
// checkpoint certification (the deciding observer watches the directory).
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "libc3/json_num.hpp"
#include "scoutd/daemon/daemon.hpp"

namespace scout::scoutd {

using nlohmann::json;

namespace {
std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

LearnOptions Daemon::learn_options() const {
  LearnOptions o;
  o.on = cfg_.learn;
  o.window_s = cfg_.learn_window_s;
  o.round_s = cfg_.learn_round_s;
  o.warmup_rounds = cfg_.learn_warmup;
  o.consecutive = cfg_.learn_consecutive;
  o.quantile = cfg_.learn_quantile;
  o.margin = cfg_.learn_margin;
  o.seed = static_cast<std::uint64_t>(cfg_.learn_seed);
  learn::parse_aggregation(cfg_.learn_aggregation, o.aggregation);  // validated when parsed
  return o;
}

std::vector<int> Daemon::ranks_of_observer(int observer) {
  if (observer < 0 || observer >= static_cast<int>(observers_.size())) return {};
  const auto& o = observers_[static_cast<std::size_t>(observer)];
  std::vector<int> out;
  for (int r = o.first_rank; r <= o.last_rank; ++r) out.push_back(r);
  if (out.empty() && node_ranks_.count(o.node)) out = node_ranks_[o.node];
  return out;
}

void Daemon::decide_replay(json& down, const std::vector<RankEvidence>* ev) {
  if (!coordinator_) return;
  if (ev) {
    node_ranks_.clear();
    for (auto& e : *ev) node_ranks_[e.node].push_back(e.rank);
  }
  std::set<int> live(tree_->alive().begin(), tree_->alive().end());
  auto step = coordinator_->evaluate(now_s(), live, wall_ms());
  record_replay_step(step, down);
}

void Daemon::record_replay_step(ReplayCoordinator::Step& step, json& down) {
  for (auto& r : step.reruns) {
    down["replay_rerun"].push_back({{"observer", r.observer}, {"cycle", r.cycle}, {"device", r.device},
                                    {"recipe", r.recipe}, {"times", r.times}});
    log(fmt::format("replay cycle {}: {} {} {} disagrees with the majority; re-running it {} times", r.cycle,
                    observers_[static_cast<std::size_t>(r.observer)].node, r.recipe, r.device, r.times));
  }
  if (!down.contains("events")) down["events"] = json::array();
  {
    std::lock_guard lk(mu_);
    for (std::size_t i = 0; i < step.verdicts.size(); ++i) {
      auto& d = step.verdicts[i];
      d.ranks = ranks_of_observer(step.verdict_observers[i]);
      decider_->propose(d);
    }
    decider_->flush(down["events"]);
    forward(down["events"]);
  }
  if (step.cycle_done) {
    auto& [id, rec] = *step.cycle_done;
    sql::ReplayCycleRow row;
    row.job_id = cfg_.job_id;
    row.cycle = id;
    row.started_ms = rec.value("started_ms", std::int64_t{0});
    row.finished_ms = rec.value("finished_ms", std::int64_t{0});
    row.observers = rec.value("observers", std::int64_t{0});
    row.expected = rec.value("expected", std::int64_t{0});
    row.devices = rec.value("devices", std::int64_t{0});
    row.outcome = rec.value("outcome", "incomplete");
    row.cpu_s = rec.value("cpu_s", 0.0);
    row.detail = rec.value("detail", json::object()).dump();
    try {
      ledger_->insert_replay_cycle(row);
    } catch (const std::exception& e) {
      log(fmt::format("ledger: replay cycle {} not recorded: {}", id, e.what()));
    }
    log(fmt::format("replay cycle {}: {} ({} of {} nodes, {} devices, {:.3f} CPU s)", id, row.outcome,
                    row.observers, row.expected, row.devices, row.cpu_s));
  }
}

// The deciding observer watches the checkpoint directory: observer 0 from
// the start, a successor from when it takes over (its first scan finds what
// was written meanwhile; paths already in the ledger are not added twice).
void Daemon::start_checkpoint_watcher() {
  if (cfg_.ckpt_dir.empty() || ckpt_tried_) return;
  ckpt_tried_ = true;
  try {
    ckpt_ = std::make_unique<CheckpointWatcher>(cfg_.ckpt_dir, cfg_.ckpt_settle_s, cfg_.ckpt_marker);
    log(fmt::format("watching checkpoints in {}", cfg_.ckpt_dir));
  } catch (const std::exception& e) {
    log(fmt::format("{}; checkpoints are not certified", e.what()));
  }
}

void Daemon::certify_checkpoints() {
  if (cfg_.ckpt_dir.empty()) return;
  start_checkpoint_watcher();  // a no-op unless this observer just took over
  try {
    if (ckpt_)
      for (auto& c : ckpt_->poll(wall_ms())) {
        sql::CheckpointRow row;
        row.job_id = cfg_.job_id;
        row.path = c.path;
        row.written_ms = c.written_ms;
        row.state = "candidate";
        row.reason = "complete; waiting for a clean replay cycle after it";
        if (ledger_->add_checkpoint(row)) log(fmt::format("checkpoint {}: candidate", c.path));
      }
    std::vector<sql::CheckpointRow> candidates;
    for (auto& c : ledger_->checkpoints(cfg_.job_id))
      if (c.state == "candidate") candidates.push_back(c);
    if (candidates.empty()) return;
    auto cycles = ledger_->replay_cycles(cfg_.job_id);
    std::vector<SdcEvent> sdc;
    for (auto& v : ledger_->verdicts(cfg_.job_id)) {
      if (v.kind != "sdc" || (v.status != "attributed" && v.status != "inconclusive")) continue;
      json ev = json::parse(v.evidence, nullptr, false);
      std::string what = v.status + " " + (ev.is_object() ? ev.value("source", "") : "") + " " + v.hosts +
                         " " + v.ranks;
      sdc.push_back({v.id, iso_to_unix_ms(v.detected_at), what});
    }
    for (auto& c : candidates)
      if (auto d = certify(c, cycles, sdc)) {
        ledger_->set_checkpoint_state(c.id, d->first, d->second);
        log(fmt::format("checkpoint {}: {}: {}", c.path, d->first, d->second));
      }
  } catch (const std::exception& e) {
    log(fmt::format("checkpoints: {}", e.what()));
  }
}

void Daemon::apply_replay(const json& down) {
  if (!replay_) return;
  try {
    if (down.contains("replay_start")) {
      const long id = down["replay_start"].get<long>();
      replay_->start_cycle(id);
      if (coordinator_) coordinator_->observed_start(id, now_s());  // for a later take-over
    }
    if (down.contains("replay_rerun"))
      for (auto& r : down["replay_rerun"]) {
        if (c3::json_int_or(r, "observer", -1) != me_) continue;
        replay_->rerun(r.value("cycle", 0L), r.value("device", ""), r.value("recipe", ""),
                       std::clamp(c3::json_int_or(r, "times", 1), 1, 100));
      }
  } catch (const nlohmann::json::exception& e) {
    ++wire::stats().malformed;  // a field of the wrong type: dropped, never trusted
    log(fmt::format("wire: malformed replay request dropped: {}", e.what()));
  }
}

}  // namespace scout::scoutd
