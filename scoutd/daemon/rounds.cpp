// scoutd's rounds (see daemon.hpp): each period a trigger round; a gather
// round when the root asks for the evidence; a learn round when it is time.
// decide_* run at the deciding observer only and return its down message.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "scoutd/daemon/daemon.hpp"
#include "libc3/json_num.hpp"

namespace scout::scoutd {

using nlohmann::json;

namespace {

// Whether the largest value stands out from an upper estimate of the median
// of a merged histogram by both thresholds.
bool stands_out(const std::uint32_t* hist, double max, double abs_s, double rel) {
  std::uint64_t total = 0, cum = 0;
  for (int b = 0; b < kComputeBins; ++b) total += hist[b];
  if (total < 3) return false;
  for (int b = 0; b < kComputeBins; ++b) {
    cum += hist[b];
    if (2 * cum >= total) {
      const double median_upper = compute_bin_upper(b);
      // The same guard as the detectors: it scales with the median.
      return max > median_upper * rel && max > median_upper + absolute_guard(abs_s, median_upper);
    }
  }
  return false;
}

json empty_down() { return json{{"stop", false}, {"gather", false}, {"events", json::array()}}; }

}  // namespace

void Daemon::note_lost(const std::vector<int>& newly_lost) {
  std::lock_guard lk(mu_);
  ++rounds_;
  for (int w : newly_lost) {
    book_.note_lost(w);
    log(fmt::format("observer {} ({}) lost", w, observers_[static_cast<std::size_t>(w)].node));
  }
}

// Observers the majority took back (a frozen or cut-off scoutd that came
// back): their ranks are observed again, and their loss is resolved.
void Daemon::note_membership(const c3::RoundResult& r) {
  std::lock_guard lk(mu_);
  if (r.minority) {
    if (!in_minority_)
      log(fmt::format("sees {} of {} observers, no strict majority: deciding nothing and asking to rejoin",
                      tree_->alive().size(), size_));
    in_minority_ = true;
    return;
  }
  for (int w : r.rejoined) {
    if (w == me_) {
      log(fmt::format("rejoined the observers at round {} ({} of {} alive)", tree_->round(), tree_->alive().size(),
                      size_));
      in_minority_ = false;
      continue;
    }
    book_.note_returned(w);
    log(fmt::format("observer {} ({}) rejoined", w, observers_[static_cast<std::size_t>(w)].node));
    if (tree_->is_root()) decider_->resolve(fmt::format("observer_lost:{}", w));
  }
}

bool Daemon::period() {
  announce_ranks();
  const LocalSummary s = watcher_->summary();
  wire::Trigger t{};
  t.max_stall_s = s.max_stall_s;
  t.waiting = s.waiting;
  t.attached = s.attached;
  t.finalized = s.finalized;
  t.deaths = s.unreported_deaths;
  t.stop = g_stop_signal ? 1u : 0u;
  t.min_seq = s.min_seq;
  t.max_seq = s.max_seq;
  t.max_compute_s = s.max_compute_s;
  t.max_comm_s = s.max_comm_s;
  std::copy(std::begin(s.compute_hist), std::end(s.compute_hist), t.compute_hist);
  std::copy(std::begin(s.comm_hist), std::end(s.comm_hist), t.comm_hist);
  t.replay_pending = replay_ ? static_cast<std::uint32_t>(replay_->pending()) : 0u;
  t.replay_demand = replay_demand_.exchange(false) ? 1u : 0u;
  t.outsig_pending = s.outsig_new;
  t.suspects = (s.max_stopped_s >= cfg_.stall_threshold_s ? 1u : 0u) + s.ended;
  t.p2p_active = s.p2p_active;
  t.learn_pending = fed_ ? static_cast<std::uint32_t>(fed_->pending_flags()) : 0u;
  // GPU health: once ranks are attached (their GPUs known), every interval.
  if (gpu_health_ && s.attached > 0 && now_s() - last_gpu_poll_s_ >= cfg_.gpu_health_interval_s) {
    last_gpu_poll_s_ = now_s();
    std::set<std::string> buses;
    for (auto& e : watcher_->evidence())
      if (e.gpu.present && !e.gpu.bus_id.empty()) buses.insert(c3::normalise_bus_id(e.gpu.bus_id));
    if (std::size_t n = gpu_health_->poll(buses); n > 0) log(fmt::format("GPU health: {} new finding(s)", n));
  }
  if (gpu_health_) t.suspects += static_cast<std::uint32_t>(gpu_health_->pending());
  {
    std::lock_guard lk(mu_);
    t.book_behind = book_behind_ ? 1u : 0u;
  }
  auto r = tree_->run(wire::encode_trigger(t), wire::combine_triggers,
                      [this](const wire::Bytes& acc, const std::vector<int>& lost) { return decide_trigger(acc, lost); });
  note_lost(r.newly_lost);
  note_membership(r);
  if (r.expelled) {
    // Frozen (SIGSTOP, swap, a network blip) past the deadlines: the others
    // went on without it. It asks back in from the next round on.
    log("the other observers declared this one lost; asking to rejoin");
    return !g_stop_signal;
  }
  const json down = wire::decode_json(r.down, wire::Kind::kDecisionDown).value_or(json::object());
  apply_down(down);
  if (r.complete && down.value("gather", false)) gather_round();
  // Federated learning: telemetry windows, and a round when the root says.
  if (fed_ && now_s() - last_window_s_ >= cfg_.learn_window_s) {
    last_window_s_ = now_s();
    const auto ev = watcher_->evidence();
    std::vector<c3::GpuTelemetry> gpus;
    if (gpu_telemetry_ && std::any_of(ev.begin(), ev.end(), [](auto& e) { return e.gpu.present; }))
      gpus = gpu_telemetry_->telemetry();
    fed_->add_windows(sampler_.sample(ev, now_s(), gpus));
  }
  if (fed_ && r.complete && down.value("learn", false)) learn_round();
  if (down.value("stop", false)) return false;
  if (!r.complete && g_stop_signal) return false;  // no root to agree with
  return true;
}

void Daemon::gather_round() {
  auto ev = watcher_->evidence(true);
  std::vector<int> dead;
  for (auto& e : ev)
    if (e.attached && !e.alive) dead.push_back(e.rank);
  json payload = json(ev);
  std::vector<replay::Report> reports;
  if (replay_) reports = replay_->take_finished();
  for (auto& rep : reports) payload.push_back({{"replay", rep}, {"observer", me_}});
  std::vector<AnomalyFlag> flags;
  if (fed_) flags = fed_->take_flags();
  for (auto& f : flags) payload.push_back({{"telemetry", f}, {"observer", me_}});
  std::vector<json> gpu_findings;
  if (gpu_health_) gpu_findings = gpu_health_->take(me_);
  for (auto& f : gpu_findings) payload.push_back(f);
  auto g = tree_->run(wire::encode_json(wire::Kind::kGatherUp, payload), wire::concat_gathers,
                      [this](const wire::Bytes& acc, const std::vector<int>&) { return decide_gather(acc); });
  note_lost(g.newly_lost);
  note_membership(g);
  const json gd = wire::decode_json(g.down, wire::Kind::kDecisionDown).value_or(json::object());
  apply_down(gd);
  if (g.complete && !gd.value("deaths_pending", false)) watcher_->mark_deaths_reported(dead);
  else if (replay_) replay_->put_back(std::move(reports));
  if (!g.complete && gpu_health_) gpu_health_->put_back(std::move(gpu_findings));
}

void Daemon::learn_round() {
  std::vector<double> rec;
  append_record(rec, fed_->contribution());
  auto lr = tree_->run(wire::encode_doubles(wire::Kind::kLearnUp, rec), wire::concat_doubles,
                       [this](const wire::Bytes& acc, const std::vector<int>&) { return decide_learn(acc); });
  note_lost(lr.newly_lost);
  note_membership(lr);
  fed_->apply_global(wire::decode_doubles(lr.down, wire::Kind::kLearnDown).value_or(std::vector<double>{}));
  if (fed_->round() != learn_logged_round_) {
    learn_logged_round_ = fed_->round();
    log(fmt::format("learn round {} applied: model {:016x}", learn_logged_round_, fed_->model_signature()));
  }
}

wire::Bytes Daemon::decide_trigger(const wire::Bytes& acc, const std::vector<int>& lost) {
  json down = empty_down();
  const auto decoded = wire::decode_trigger(acc);
  wire::Trigger t = decoded.value_or(wire::Trigger{});
  if (decoded) down["stop"] = t.stop != 0;
  if (!tree_->has_quorum()) return wire::encode_json(wire::Kind::kDecisionDown, down);  // a minority never decides
  auto& events = down["events"];
  bool trouble = !decoded || t.malformed > 0;  // what we could not read is compared in full
  if (t.malformed > 0) log(fmt::format("{} malformed trigger message(s) this round; gathering the evidence", t.malformed));
  {
    std::lock_guard lk(mu_);
    std::set<int> to_record = book_.lost_unrecorded();
    to_record.insert(lost.begin(), lost.end());
    for (int w : to_record) {
      const auto& o = observers_[static_cast<std::size_t>(w)];
      std::vector<int> ranks;
      for (int r = o.first_rank; r <= o.last_rank; ++r) ranks.push_back(r);
      decider_->propose(observer_lost_draft({w, o.node, o.pid, ranks}, cfg_.round_timeout_s));
    }
    // Progress resumed everywhere: open progress incidents are resolved.
    if (decoded && t.attached > 0 && t.max_stall_s < cfg_.stall_threshold_s && t.deaths == 0)
      decider_->progress_resumed();
    if (!decider_->open_or_queued("straggler").empty()) trouble = true;  // re-checked each gather
    decider_->flush(events);
    forward(events);
    // Every observer checks its book against this digest; one that missed a
    // down message (it fell behind a round) gets the whole book next time.
    const auto d = book_.digest();
    down["book_digest"] = {d.verdicts, d.resolved};
    if (t.book_behind > 0) down["book"] = book_.snapshot();
  }
  if ((t.max_stall_s >= cfg_.stall_threshold_s && t.waiting > 0) || t.deaths > 0 || t.suspects > 0) trouble = true;
  // Stragglers: the slowest rank's compute time against an upper estimate
  // of the median from the merged histogram.
  if (stands_out(t.compute_hist, t.max_compute_s, cfg_.straggler_absolute_s, cfg_.straggler_relative) ||
      stands_out(t.comm_hist, t.max_comm_s, cfg_.straggler_absolute_s, cfg_.straggler_relative))
    trouble = true;
  // Replay reports and collective-output signatures ride on a gather.
  if (t.replay_pending > 0) trouble = true;
  // Point-to-point traffic: late senders are compared every outsig period.
  if (t.p2p_active > 0 && now_s() - last_p2p_gather_s_ >= cfg_.outsig_period_s / 2) {
    last_p2p_gather_s_ = now_s();
    trouble = true;
  }
  // At stop, whatever was signed since the last comparison is compared now:
  // a corruption shortly before the end of a job is still named.
  if (t.outsig_pending > 0 && (t.stop || now_s() - last_outsig_gather_s_ >= cfg_.outsig_period_s)) {
    last_outsig_gather_s_ = now_s();
    trouble = true;
  }
  if (cfg_.replay) {
    if (!coordinator_)
      coordinator_.emplace(CoordinatorOptions{cfg_.replay_interval_s, cfg_.replay_reruns, cfg_.replay_timeout_s});
    if (auto id = coordinator_->want_start(now_s(), t.replay_demand != 0 || straggler_demand_)) {
      down["replay_start"] = *id;
      log(fmt::format("replay cycle {} starts{}", *id,
                      t.replay_demand ? " (asked for)" : straggler_demand_ ? " (compute straggler)" : ""));
      straggler_demand_ = false;
    }
    decide_replay(down, nullptr);  // decisions that waited past their deadline
  }
  certify_checkpoints();
  if (t.learn_pending > 0) trouble = true;
  if (cfg_.learn && now_s() - last_learn_s_ >= cfg_.learn_round_s) {
    last_learn_s_ = now_s();
    down["learn"] = true;
  }
  down["gather"] = trouble;
  return wire::encode_json(wire::Kind::kDecisionDown, down);
}

wire::Bytes Daemon::decide_gather(const wire::Bytes& acc) {
  json down = empty_down();
  if (!tree_->has_quorum()) return wire::encode_json(wire::Kind::kDecisionDown, down);
  const json all = wire::decode_json(acc, wire::Kind::kGatherUp).value_or(json::array());
  std::vector<RankEvidence> ev;
  std::vector<VerdictDraft> drafts;
  std::vector<json> gpu_findings;
  std::size_t refused = 0;
  if (all.is_array())
    for (auto& j : all) {
      try {
        if (j.is_object() && j.contains("telemetry")) {
          drafts.push_back(telemetry_anomaly_draft(j["telemetry"].get<AnomalyFlag>()));
        } else if (j.is_object() && j.contains("gpu_health")) {
          if (j["gpu_health"].is_object()) gpu_findings.push_back(j["gpu_health"]);
        } else if (j.is_object() && j.contains("replay")) {
          if (coordinator_) coordinator_->on_report(c3::json_int_or(j, "observer", -1), j["replay"].get<replay::Report>());
        } else {
          ev.push_back(j.get<RankEvidence>());
        }
      } catch (const std::exception&) {
        ++refused;  // a malformed entry from a peer is skipped, never trusted
      }
    }
  if (refused) log(fmt::format("gather: {} malformed evidence entr{} dropped", refused, refused == 1 ? "y" : "ies"));
  std::sort(ev.begin(), ev.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  for (auto& f : gpu_findings) {
    try {
      drafts.push_back(gpu_health_draft(f, ev));
    } catch (const std::exception&) {
      ++refused;
    }
  }
  bool deaths_pending = false;
  if (auto c = detect_crash(ev, detector_, &deaths_pending)) drafts.push_back(*c);
  if (deaths_pending) down["deaths_pending"] = true;  // the deaths stay unreported: gathered again
  else for (auto& d : detect_progress(ev, detector_)) drafts.push_back(std::move(d));
  for (auto& d : outputs_.update(ev)) drafts.push_back(std::move(d));
  std::set<std::string> open_stragglers;
  {
    std::lock_guard lk(mu_);
    open_stragglers = decider_->open_or_queued("straggler");
  }
  auto st = stragglers_.update(ev, open_stragglers);
  if (!st.verdicts.empty() && cfg_.replay) straggler_demand_ = true;  // is its core computing wrong?
  for (auto& d : st.verdicts) drafts.push_back(std::move(d));
  auto ct = comm_stragglers_.update(ev, open_stragglers);
  auto lt = late_senders_.update(ev, now_s(), open_stragglers);
  for (auto& d : lt.verdicts) drafts.push_back(std::move(d));
  for (auto& d : ct.verdicts) drafts.push_back(std::move(d));
  if (st.compared) down["median_compute_s"] = st.median_compute_s;
  {
    std::lock_guard lk(mu_);
    for (auto& key : st.resolved) decider_->resolve(key);
    for (auto& key : ct.resolved) decider_->resolve(key);
    for (auto& key : lt.resolved) decider_->resolve(key);
    decider_->propose_all(drafts);
    decider_->flush(down["events"]);
    forward(down["events"]);
  }
  decide_replay(down, &ev);
  return wire::encode_json(wire::Kind::kDecisionDown, down);
}

wire::Bytes Daemon::decide_learn(const wire::Bytes& acc) {
  if (!fed_server_) fed_server_.emplace(learn_options(), learn::MemAEShape{kTelemetryFeatures, 32, 8, 20});
  const auto all = wire::decode_doubles(acc, wire::Kind::kLearnUp).value_or(std::vector<double>{});
  std::string summary;
  auto down = fed_server_->round(split_records(all), summary);
  log(fmt::format("learn round: {}; {} bytes in, {} bytes out", summary, acc.size(), down.size() * sizeof(double)));
  return wire::encode_doubles(wire::Kind::kLearnDown, down);
}

void Daemon::apply_down(const json& down) {
  if (!down.is_object()) return;
  {
    std::lock_guard lk(mu_);
    if (down.contains("median_compute_s") && down["median_compute_s"].is_number())
      median_compute_s_ = down["median_compute_s"].get<double>();
    if (down.contains("events")) {
      book_.apply(down["events"]);
      replicas_->take(down["events"]);
    }
    if (down.contains("book")) {  // catching up after a missed round
      book_.apply(down["book"]);
      replicas_->take(down["book"]);
    }
    if (down.contains("book_digest") && down["book_digest"].is_array() && down["book_digest"].size() == 2 &&
        down["book_digest"][0].is_number_unsigned() && down["book_digest"][1].is_number_unsigned()) {
      const IncidentBook::Digest root{down["book_digest"][0].get<std::size_t>(),
                                      down["book_digest"][1].get<std::size_t>()};
      book_behind_ = !(book_.digest() == root);
    }
    replicas_->flush();  // also retries what an earlier round could not commit
  }
  apply_replay(down);
}

void Daemon::final_flush() {
  // The deciding observer commits what is still queued (the others' queues
  // are empty); there is no round left to tell the others.
  std::lock_guard lk(mu_);
  if (replicas_ && replicas_->pending()) {
    const auto n = replicas_->flush();
    log(fmt::format("at stop: {} replicated verdict(s) or resolution(s) committed, {} not", n, replicas_->pending()));
  }
  if (!decider_ || decider_->pending() == 0) return;
  json events = json::array();
  const auto n = decider_->flush(events);
  log(fmt::format("at stop: {} queued verdict(s) or resolution(s) committed, {} not", n, decider_->pending()));
}

}  // namespace scout::scoutd
