// scoutd main loop (see daemon.hpp).
#include "scoutd/daemon.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "scoutd/control_server.hpp"
#include "scoutd/proc_info.hpp"
#include "scoutd/runtime_paths.hpp"

namespace scout::scoutd {

using nlohmann::json;
volatile std::sig_atomic_t g_stop_signal = 0;

namespace {

struct Trigger {
  double max_stall_s;
  std::uint32_t waiting, attached, finalized, deaths, stop, pad;
  std::uint64_t min_seq, max_seq;
  double max_compute_s;
  std::uint32_t compute_hist[kComputeBins];
  double max_comm_s;
  std::uint32_t comm_hist[kComputeBins];
  std::uint32_t replay_pending;  // replay reports waiting to be gathered
  std::uint32_t replay_demand;   // someone asked for a replay cycle
  std::uint32_t outsig_pending;  // new collective-output signatures
  std::uint32_t learn_pending;   // telemetry anomaly flags to report
};

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
      return max > median_upper * rel && max > median_upper + abs_s;
    }
  }
  return false;
}

c3::Bytes to_bytes(const Trigger& t) {
  c3::Bytes b(sizeof t);
  std::memcpy(b.data(), &t, sizeof t);
  return b;
}
Trigger from_bytes(const c3::Bytes& b) {
  Trigger t{};
  if (b.size() == sizeof t) std::memcpy(&t, b.data(), sizeof t);
  return t;
}
c3::Bytes to_bytes(const json& j) {
  std::string s = j.dump();
  return {s.begin(), s.end()};
}
json parse_bytes(const c3::Bytes& b) {
  if (b.empty()) return json::object();
  return json::parse(b.begin(), b.end(), nullptr, false);
}

void log(const std::string& node, const std::string& msg) {
  std::fprintf(stderr, "scoutd: %s: %s\n", node.c_str(), msg.c_str());
}

}  // namespace

Daemon::Daemon(ScoutdConfig cfg)
    : cfg_(std::move(cfg)),
      stragglers_({cfg_.straggler_absolute_s, cfg_.straggler_relative, cfg_.straggler_confirmations, 4}),
      comm_stragglers_({cfg_.straggler_absolute_s, cfg_.straggler_relative, cfg_.straggler_confirmations, 4}) {
  detector_.stall_threshold_s = cfg_.stall_threshold_s;
}

void Daemon::init_observers() {
  MPI_Comm_rank(MPI_COMM_WORLD, &me_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  ObserverInfo mine;
  if (cfg_.simulate_nodes) {
    mine.first_rank = static_cast<int>(static_cast<long>(me_) * cfg_.ranks / size_);
    mine.last_rank = static_cast<int>(static_cast<long>(me_ + 1) * cfg_.ranks / size_) - 1;
    mine.node = fmt::format("{}{}", cfg_.node_prefix, me_ + 1);
  } else if (cfg_.slurm) {
    // Which ranks live here is learnt from their records (host field); the
    // node row and observer_lost verdicts carry no rank range.
    mine.first_rank = 0;
    mine.last_rank = -1;
    const char* n = std::getenv("SLURMD_NODENAME");
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    mine.node = !cfg_.node.empty() ? cfg_.node : (n && *n ? n : host);
  } else {
    mine.first_rank = cfg_.first_rank;
    mine.last_rank = cfg_.last_rank;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    mine.node = cfg_.node.empty() ? host : cfg_.node;
  }
  mine.pid = static_cast<int>(getpid());
  // Everyone is alive at start: one allgather of who observes what.
  struct Wire {
    char node[64];
    int first, last, pid;
  } w{};
  std::snprintf(w.node, sizeof w.node, "%s", mine.node.c_str());
  w.first = mine.first_rank;
  w.last = mine.last_rank;
  w.pid = mine.pid;
  std::vector<Wire> all(static_cast<std::size_t>(size_));
  MPI_Allgather(&w, sizeof w, MPI_BYTE, all.data(), sizeof w, MPI_BYTE, MPI_COMM_WORLD);
  for (auto& a : all) observers_.push_back({a.node, a.first, a.last, a.pid});
}

void Daemon::init_ledger() {
  // The first observer creates and migrates the ledger alone: a journal-mode
  // change races with other connections and is not covered by the busy
  // timeout. Everyone is alive at start, so the barriers cannot hang.
  if (me_ == 0) ledger_.emplace(sql::Ledger::open(cfg_.ledger, sql::Ledger::Mode::kReadWrite));
  MPI_Barrier(MPI_COMM_WORLD);
  if (me_ != 0) ledger_.emplace(sql::Ledger::open(cfg_.ledger, sql::Ledger::Mode::kReadWrite));
  const auto& o = observers_[static_cast<std::size_t>(me_)];
  if (me_ == 0 && !ledger_->job(cfg_.job_id)) {
    sql::JobRow j;
    j.job_id = cfg_.job_id;
    j.uid = getuid();
    j.user = std::getenv("USER") ? std::getenv("USER") : std::to_string(getuid());
    j.launcher = cfg_.simulate_nodes ? "scout-run" : "slurm";
    j.nodes = size_;
    j.ranks = cfg_.ranks;
    ledger_->insert_job(j);
  }
  MPI_Barrier(MPI_COMM_WORLD);  // the job row exists before node rows refer to it
  ledger_->upsert_node({cfg_.job_id, o.node, o.pid, o.first_rank, o.last_rank, ""});
}

json Daemon::status_json() {
  json ranks = json::array();
  double median = 0;
  {
    std::lock_guard lk(mu_);
    median = median_compute_s_;
  }
  for (auto& e : watcher_->evidence()) {
    json r = e;
    r["collective"] = c3::coll_name(e.kind);
    r["process"] = describe_state(e.state);
    r["score"] = median > 0 && e.steps > 0 ? e.compute_s / median : 0.0;
    ranks.push_back(std::move(r));
  }
  json learn = fed_ ? fed_->status() : json(nullptr);
  std::lock_guard lk(mu_);
  return json{{"learn", learn}, {"job", cfg_.job_id}, {"step", cfg_.step_id},
              {"node", watcher_->node()}, {"first_rank", watcher_->first_rank()},
              {"last_rank", watcher_->last_rank()}, {"observers", size_},
              {"observers_alive", tree_ ? tree_->alive().size() : 0}, {"round", rounds_},
              {"stall_threshold_s", cfg_.stall_threshold_s},
              {"median_compute_s", median_compute_s_}, {"ranks", ranks}};
}

json Daemon::verdicts_json() {
  std::lock_guard lk(mu_);
  return json(verdicts_);
}

void Daemon::announce_ranks() {
  for (auto [rank, pid] : watcher_->take_new_attachments()) {
    try {
      ledger_->upsert_rank(cfg_.job_id, cfg_.step_id, rank, watcher_->node(), pid);
    } catch (const std::exception& e) {
      log(watcher_->node(), e.what());
    }
  }
}

void Daemon::record_draft(const VerdictDraft& d, json& events) {
  {
    std::lock_guard lk(mu_);
    if (open_.count(d.key)) return;  // same incident, already recorded
  }
  sql::VerdictRow row;
  row.job_id = cfg_.job_id;
  row.step = cfg_.step_id;
  row.kind = d.kind;
  row.status = d.status;
  row.ranks = json(d.ranks).dump();
  row.hosts = json(d.hosts).dump();
  row.evidence = d.evidence.dump();
  row.detected_at = sql::now_iso8601();
  try {
    row.id = ledger_->insert_verdict(row);  // committed before anyone is told
  } catch (const std::exception& e) {
    log(watcher_->node(), fmt::format("ledger: verdict not recorded, will retry: {}", e.what()));
    return;
  }
  json v = {{"id", row.id}, {"job", row.job_id}, {"step", row.step}, {"kind", row.kind},
            {"status", row.status}, {"ranks", d.ranks}, {"hosts", d.hosts},
            {"evidence", d.evidence}, {"detected_at", row.detected_at}, {"resolved_at", nullptr}};
  events.push_back({{"op", "new"}, {"key", d.key}, {"verdict", v}});
  log(watcher_->node(), fmt::format("verdict {}: {} {} ranks {} hosts {}", row.id, d.kind, d.status,
                                    row.ranks, row.hosts));
}

c3::Bytes Daemon::decide_trigger(const c3::Bytes& acc, const std::vector<int>& lost) {
  Trigger t = from_bytes(acc);
  json down = {{"stop", t.stop != 0}, {"gather", false}, {"events", json::array()}};
  if (!tree_->has_quorum()) return to_bytes(down);  // a minority never decides
  auto& events = down["events"];
  std::set<int> to_record;
  {
    std::lock_guard lk(mu_);
    to_record = lost_unrecorded_;
  }
  to_record.insert(lost.begin(), lost.end());
  for (int w : to_record) {
    const auto& o = observers_[static_cast<std::size_t>(w)];
    VerdictDraft d;
    d.kind = "observer_lost";
    d.status = "attributed";
    for (int r = o.first_rank; r <= o.last_rank; ++r) d.ranks.push_back(r);
    d.hosts = {o.node};
    d.evidence = {{"rule", "observer missed its consensus round deadline"},
                  {"observer", w}, {"node", o.node}, {"scoutd_pid", o.pid},
                  {"unobserved_ranks", d.ranks},
                  {"round_timeout_s", cfg_.round_timeout_s}};
    d.key = fmt::format("observer_lost:{}", w);
    record_draft(d, events);
  }
  // Progress resumed everywhere: open progress incidents are resolved.
  if (t.attached > 0 && t.max_stall_s < cfg_.stall_threshold_s && t.deaths == 0) {
    std::vector<std::pair<std::string, std::int64_t>> resolve;
    {
      std::lock_guard lk(mu_);
      for (auto& [key, id] : open_)
        if (key.rfind("behind", 0) == 0 || key.rfind("hang", 0) == 0 ||
            key.rfind("divergence", 0) == 0)
          resolve.emplace_back(key, id);
    }
    for (auto& [key, id] : resolve) {
      std::string at = sql::now_iso8601();
      try {
        ledger_->resolve_verdict(id, at);
        events.push_back({{"op", "resolve"}, {"key", key}, {"id", id}, {"at", at}});
      } catch (const std::exception& e) {
        log(watcher_->node(), e.what());
      }
    }
  }
  bool trouble = (t.max_stall_s >= cfg_.stall_threshold_s && t.waiting > 0) || t.deaths > 0;
  // Stragglers: the slowest rank's compute time against an upper estimate
  // of the median from the merged histogram; open incidents are re-checked.
  if (stands_out(t.compute_hist, t.max_compute_s, cfg_.straggler_absolute_s, cfg_.straggler_relative) ||
      stands_out(t.comm_hist, t.max_comm_s, cfg_.straggler_absolute_s, cfg_.straggler_relative))
    trouble = true;
  {
    std::lock_guard lk(mu_);
    for (auto& [key, id] : open_)
      if (key.rfind("straggler", 0) == 0) trouble = true;
  }
  // Replay reports and collective-output signatures ride on a gather.
  if (t.replay_pending > 0) trouble = true;
  if (t.outsig_pending > 0 && now_s() - last_outsig_gather_s_ >= cfg_.outsig_period_s) {
    last_outsig_gather_s_ = now_s();
    trouble = true;
  }
  if (cfg_.replay) {
    if (!coordinator_)
      coordinator_.emplace(CoordinatorOptions{cfg_.replay_interval_s, cfg_.replay_reruns, cfg_.replay_timeout_s});
    if (auto id = coordinator_->want_start(now_s(), t.replay_demand != 0 || straggler_demand_)) {
      down["replay_start"] = *id;
      log(watcher_->node(), fmt::format("replay cycle {} starts{}", *id,
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
  return to_bytes(down);
}

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
  return o;
}

c3::Bytes Daemon::decide_learn(const c3::Bytes& acc) {
  if (!fed_server_) fed_server_.emplace(learn_options(), learn::MemAEShape{kTelemetryFeatures, 32, 8, 20});
  std::vector<double> all(acc.size() / sizeof(double));
  if (!all.empty()) std::memcpy(all.data(), acc.data(), all.size() * sizeof(double));
  std::string summary;
  auto down = fed_server_->round(split_records(all), summary);
  log(watcher_->node(), fmt::format("learn round: {}; {} bytes in, {} bytes out", summary, acc.size(),
                                    down.size() * sizeof(double)));
  c3::Bytes b(down.size() * sizeof(double));
  if (!down.empty()) std::memcpy(b.data(), down.data(), b.size());
  return b;
}

double Daemon::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
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
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  auto step = coordinator_->evaluate(now_s(), live, now_ms);
  record_replay_step(step, down);
}

void Daemon::record_replay_step(ReplayCoordinator::Step& step, json& down) {
  for (auto& r : step.reruns) {
    down["replay_rerun"].push_back({{"observer", r.observer}, {"cycle", r.cycle}, {"device", r.device},
                                    {"recipe", r.recipe}, {"times", r.times}});
    log(watcher_->node(), fmt::format("replay cycle {}: {} {} {} disagrees with the majority; "
                                      "re-running it {} times", r.cycle,
                                      observers_[static_cast<std::size_t>(r.observer)].node, r.recipe,
                                      r.device, r.times));
  }
  if (!down.contains("events")) down["events"] = json::array();
  for (std::size_t i = 0; i < step.verdicts.size(); ++i) {
    auto& d = step.verdicts[i];
    d.ranks = ranks_of_observer(step.verdict_observers[i]);
    record_draft(d, down["events"]);
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
      log(watcher_->node(), fmt::format("ledger: replay cycle {} not recorded: {}", id, e.what()));
    }
    log(watcher_->node(), fmt::format("replay cycle {}: {} ({} of {} nodes, {} devices, {:.3f} CPU s)",
                                      id, row.outcome, row.observers, row.expected, row.devices, row.cpu_s));
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
    log(watcher_->node(), fmt::format("watching checkpoints in {}", cfg_.ckpt_dir));
  } catch (const std::exception& e) {
    log(watcher_->node(), fmt::format("{}; checkpoints are not certified", e.what()));
  }
}

void Daemon::certify_checkpoints() {
  if (cfg_.ckpt_dir.empty()) return;
  start_checkpoint_watcher();  // a no-op unless this observer just took over
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  try {
    if (ckpt_)
      for (auto& c : ckpt_->poll(now_ms)) {
        sql::CheckpointRow row;
        row.job_id = cfg_.job_id;
        row.path = c.path;
        row.written_ms = c.written_ms;
        row.state = "candidate";
        row.reason = "complete; waiting for a clean replay cycle after it";
        if (ledger_->add_checkpoint(row))
          log(watcher_->node(), fmt::format("checkpoint {}: candidate", c.path));
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
        log(watcher_->node(), fmt::format("checkpoint {}: {}: {}", c.path, d->first, d->second));
      }
  } catch (const std::exception& e) {
    log(watcher_->node(), fmt::format("checkpoints: {}", e.what()));
  }
}

void Daemon::apply_replay(const json& down) {
  if (!replay_) return;
  if (down.contains("replay_start")) {
    const long id = down["replay_start"].get<long>();
    replay_->start_cycle(id);
    if (coordinator_) coordinator_->observed_start(id, now_s());  // for a later take-over
  }
  if (down.contains("replay_rerun"))
    for (auto& r : down["replay_rerun"]) {
      if (r.value("observer", -1) != me_) continue;
      replay_->rerun(r.value("cycle", 0L), r.value("device", ""), r.value("recipe", ""),
                     std::clamp(r.value("times", 1), 1, 100));
    }
}

c3::Bytes Daemon::decide_gather(const c3::Bytes& acc) {
  json down = {{"stop", false}, {"gather", false}, {"events", json::array()}};
  if (!tree_->has_quorum()) return to_bytes(down);
  json all = parse_bytes(acc);
  std::vector<RankEvidence> ev;
  std::vector<VerdictDraft> telemetry_drafts;
  if (all.is_array())
    for (auto& j : all) {
      try {
        if (j.is_object() && j.contains("telemetry")) {
          AnomalyFlag f = j["telemetry"].get<AnomalyFlag>();
          VerdictDraft d;
          d.kind = "telemetry_anomaly";
          d.status = "advisory";
          d.ranks = {f.rank};
          d.hosts = {f.node};
          json top = json::array();
          for (auto& [n, v] : f.top) top.push_back({{"feature", n}, {"share", v}});
          d.evidence = {{"source", "telemetry"},
                        {"rule", fmt::format("reconstruction error above the federated threshold for {} "
                                             "consecutive windows", f.consecutive)},
                        {"score", f.score}, {"threshold", f.threshold}, {"windows", f.consecutive},
                        {"round", f.round}, {"top_features", top},
                        {"culprits", json::array({{{"rank", f.rank}, {"node", f.node}}})}};
          d.key = fmt::format("telemetry:{}", f.rank);
          telemetry_drafts.push_back(std::move(d));
          continue;
        }
        if (j.is_object() && j.contains("replay")) {
          if (coordinator_) coordinator_->on_report(j.value("observer", -1), j["replay"].get<replay::Report>());
          continue;
        }
        ev.push_back(j.get<RankEvidence>());
      } catch (const std::exception&) {
        // a malformed entry from a peer is skipped, never trusted
      }
    }
  std::sort(ev.begin(), ev.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  std::vector<VerdictDraft> drafts;
  if (auto c = detect_crash(ev, detector_)) drafts.push_back(*c);
  else drafts = detect_progress(ev, detector_);
  std::set<std::string> open_stragglers;
  {
    std::lock_guard lk(mu_);
    for (auto& [key, id] : open_)
      if (key.rfind("straggler", 0) == 0) open_stragglers.insert(key);
  }
  for (auto& d : outputs_.update(ev)) drafts.push_back(std::move(d));
  for (auto& d : telemetry_drafts) drafts.push_back(std::move(d));
  auto st = stragglers_.update(ev, open_stragglers);
  if (!st.verdicts.empty() && cfg_.replay) straggler_demand_ = true;  // is its core computing wrong?
  for (auto& d : st.verdicts) drafts.push_back(std::move(d));
  auto ct = comm_stragglers_.update(ev, open_stragglers);
  for (auto& d : ct.verdicts) drafts.push_back(std::move(d));
  st.resolved.insert(st.resolved.end(), ct.resolved.begin(), ct.resolved.end());
  if (st.compared) down["median_compute_s"] = st.median_compute_s;
  for (auto& key : st.resolved) {
    std::int64_t id = 0;
    {
      std::lock_guard lk(mu_);
      id = open_.count(key) ? open_[key] : 0;
    }
    if (!id) continue;
    std::string at = sql::now_iso8601();
    try {
      ledger_->resolve_verdict(id, at);
      down["events"].push_back({{"op", "resolve"}, {"key", key}, {"id", id}, {"at", at}});
    } catch (const std::exception& e) {
      log(watcher_->node(), e.what());
    }
  }
  // Inconclusive verdicts name nobody; they must be seen in two consecutive
  // gathers so a snapshot taken while progress resumes is not reported.
  std::map<std::string, int> seen;
  for (auto& d : drafts) {
    if (d.status == "inconclusive") {
      int n = seen[d.key] = pending_inconclusive_[d.key] + 1;
      if (n < 2) continue;
    }
    record_draft(d, down["events"]);
  }
  pending_inconclusive_ = std::move(seen);
  decide_replay(down, &ev);
  return to_bytes(down);
}

void Daemon::apply_events(const json& down) {
  std::lock_guard lk(mu_);
  if (down.contains("median_compute_s")) median_compute_s_ = down["median_compute_s"].get<double>();
  if (!down.contains("events")) return;
  for (auto& e : down["events"]) {
    std::string op = e.value("op", "");
    if (op == "new") {
      auto& v = e["verdict"];
      open_[e.value("key", "")] = v.value("id", std::int64_t{0});
      verdicts_.push_back(v);
      if (v.value("kind", "") == "observer_lost" && v.contains("evidence"))
        lost_unrecorded_.erase(v["evidence"].value("observer", -1));
    } else if (op == "resolve") {
      std::int64_t id = e.value("id", std::int64_t{0});
      for (auto& v : verdicts_)
        if (v.value("id", std::int64_t{0}) == id) v["resolved_at"] = e.value("at", "");
      open_.erase(e.value("key", ""));
    }
  }
}

int Daemon::run() {
  init_observers();
  const auto& mine = observers_[static_cast<std::size_t>(me_)];
  init_ledger();
  const std::uint32_t step_kind = coll_kind_from_name(cfg_.step_collective);
  if (cfg_.slurm)  // ranks are found by their node name, wherever Slurm put them
    watcher_ = std::make_unique<RankWatcher>(cfg_.job_id, cfg_.step_id, 0, cfg_.ranks - 1,
                                             mine.node, cfg_.tick_s, mine.node, step_kind);
  else
    watcher_ = std::make_unique<RankWatcher>(cfg_.job_id, cfg_.step_id, mine.first_rank,
                                             mine.last_rank, mine.node, cfg_.tick_s, "", step_kind);
  tree_ = std::make_unique<c3::TreeRound>(MPI_COMM_WORLD,
                                          c3::TreeRound::Options{cfg_.round_timeout_s});
  std::string root = cfg_.runtime_dir.empty() ? default_runtime_root() : cfg_.runtime_dir;
  std::string job_dir = cfg_.runtime_dir.empty() ? job_runtime_dir(root, cfg_.job_id) : root;
  std::error_code ec;
  std::filesystem::create_directories(job_dir, ec);
  ::chmod(job_dir.c_str(), 0700);
  if (cfg_.replay) {
    replay::ReplayOptions ro;
    ro.cores = cfg_.replay_cores;
    for (auto& n : cfg_.replay_recipes)
      if (auto r = replay::recipe_from_name(n)) ro.recipes.push_back(*r);
    ro.budget = cfg_.replay_budget;
    ro.idle_priority = cfg_.replay_sched == "idle";
    replay::FaultInjector faults;
    if (const char* f = std::getenv("SCOUT_REPLAY_FAULT"); f && *f) {
      try {
        faults = replay::FaultInjector(replay::parse_fault_specs(f));
        log(mine.node, fmt::format("test fault injection in replay: {}", f));
      } catch (const std::exception& e) {
        log(mine.node, fmt::format("{}; no fault injected", e.what()));
      }
    }
    replay_ = std::make_unique<replay::ReplayRunner>(mine.node, ro, std::move(faults));
    coordinator_.emplace(CoordinatorOptions{cfg_.replay_interval_s, cfg_.replay_reruns, cfg_.replay_timeout_s});
  }
  if (me_ == 0) start_checkpoint_watcher();
  if (cfg_.learn) fed_ = std::make_unique<FedClient>(learn_options(), learn::MemAEShape{kTelemetryFeatures, 32, 8, 20});
  ControlProviders providers{[this] { return status_json(); }, [this] { return verdicts_json(); },
                             cfg_.job_id, mine.node, {}};
  if (cfg_.replay)
    providers.replay = [this] {
      replay_demand_ = true;
      return std::string();
    };
  ControlServer server(control_socket_path(job_dir, mine.node), providers);
  try {
    server.start();
  } catch (const std::exception& e) {
    log(mine.node, fmt::format("control socket {}: {}; continuing without it",
                               server.path(), e.what()));
  }
  watcher_->start();
  // Under Slurm the ranks are found by node name as they appear (no block).
  const std::string which = mine.last_rank >= mine.first_rank
                                ? fmt::format("ranks {}-{}", mine.first_rank, mine.last_rank)
                                : fmt::format("the ranks Slurm places on {}", mine.node);
  log(mine.node, fmt::format("observing {} of job {} step {} (observer {}/{})", which, cfg_.job_id,
                             cfg_.step_id, me_ + 1, size_));

  auto concat = [](c3::Bytes& acc, const c3::Bytes& child) {
    json a = parse_bytes(acc), c = parse_bytes(child);
    if (!a.is_array()) a = json::array();
    if (c.is_array())
      for (auto& x : c) a.push_back(std::move(x));
    acc = to_bytes(a);
  };
  auto combine_trigger = [](c3::Bytes& acc, const c3::Bytes& child) {
    Trigger a = from_bytes(acc), c = from_bytes(child);
    a.max_stall_s = std::max(a.max_stall_s, c.max_stall_s);
    a.waiting += c.waiting;
    a.attached += c.attached;
    a.finalized += c.finalized;
    a.deaths += c.deaths;
    a.stop = a.stop | c.stop;
    a.min_seq = std::min(a.min_seq, c.min_seq);
    a.max_seq = std::max(a.max_seq, c.max_seq);
    a.max_compute_s = std::max(a.max_compute_s, c.max_compute_s);
    for (int b = 0; b < kComputeBins; ++b) a.compute_hist[b] += c.compute_hist[b];
    a.max_comm_s = std::max(a.max_comm_s, c.max_comm_s);
    for (int b = 0; b < kComputeBins; ++b) a.comm_hist[b] += c.comm_hist[b];
    a.replay_pending += c.replay_pending;
    a.replay_demand |= c.replay_demand;
    a.outsig_pending += c.outsig_pending;
    a.learn_pending += c.learn_pending;
    acc = to_bytes(a);
  };
  const auto period = std::chrono::duration<double>(cfg_.round_period_s);
  bool stopping = false;
  while (!stopping) {
    const auto next = std::chrono::steady_clock::now() + period;
    while (std::chrono::steady_clock::now() < next && !g_stop_signal)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    announce_ranks();
    LocalSummary s = watcher_->summary();
    Trigger t{s.max_stall_s, s.waiting, s.attached, s.finalized, s.unreported_deaths,
              g_stop_signal ? 1u : 0u, 0, s.min_seq, s.max_seq, s.max_compute_s, {}, s.max_comm_s, {},
              replay_ ? static_cast<std::uint32_t>(replay_->pending()) : 0u,
              replay_demand_.exchange(false) ? 1u : 0u, s.outsig_new,
              fed_ ? static_cast<std::uint32_t>(fed_->pending_flags()) : 0u};
    std::copy(std::begin(s.compute_hist), std::end(s.compute_hist), t.compute_hist);
    std::copy(std::begin(s.comm_hist), std::end(s.comm_hist), t.comm_hist);
    auto r = tree_->run(to_bytes(t), combine_trigger,
                        [this](const c3::Bytes& acc, const std::vector<int>& lost) {
                          return decide_trigger(acc, lost);
                        });
    {
      std::lock_guard lk(mu_);
      ++rounds_;
      for (int w : r.newly_lost) {
        lost_unrecorded_.insert(w);
        log(mine.node, fmt::format("observer {} ({}) lost", w,
                                   observers_[static_cast<std::size_t>(w)].node));
      }
    }
    if (r.expelled) {
      log(mine.node, "the other observers declared this one lost; stopping");
      break;
    }
    json down = parse_bytes(r.down);
    apply_events(down);
    apply_replay(down);
    if (r.complete && down.value("gather", false)) {
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
      auto g = tree_->run(to_bytes(payload), concat,
                          [this](const c3::Bytes& acc, const std::vector<int>&) {
                            return decide_gather(acc);
                          });
      {
        std::lock_guard lk(mu_);
        ++rounds_;
        for (int w : g.newly_lost) lost_unrecorded_.insert(w);
      }
      json gd = parse_bytes(g.down);
      apply_events(gd);
      apply_replay(gd);
      if (g.complete) watcher_->mark_deaths_reported(dead);
      else if (replay_) replay_->put_back(std::move(reports));
    }
    // Federated learning: telemetry windows, and a round when the root says.
    if (fed_ && now_s() - last_window_s_ >= cfg_.learn_window_s) {
      last_window_s_ = now_s();
      fed_->add_windows(sampler_.sample(watcher_->evidence(), now_s()));
    }
    if (fed_ && r.complete && down.value("learn", false)) {
      std::vector<double> rec;
      append_record(rec, fed_->contribution());
      c3::Bytes payload(rec.size() * sizeof(double));
      std::memcpy(payload.data(), rec.data(), payload.size());
      auto lr = tree_->run(
          payload, [](c3::Bytes& acc, const c3::Bytes& child) { acc.insert(acc.end(), child.begin(), child.end()); },
          [this](const c3::Bytes& acc, const std::vector<int>&) { return decide_learn(acc); });
      {
        std::lock_guard lk(mu_);
        ++rounds_;
        for (int w : lr.newly_lost) lost_unrecorded_.insert(w);
      }
      std::vector<double> dd(lr.down.size() / sizeof(double));
      if (!dd.empty()) std::memcpy(dd.data(), lr.down.data(), dd.size() * sizeof(double));
      fed_->apply_global(dd);
      if (fed_->round() != learn_logged_round_) {
        learn_logged_round_ = fed_->round();
        log(mine.node, fmt::format("learn round {} applied: model {:016x}", learn_logged_round_, fed_->model_signature()));
      }
    }
    if (down.value("stop", false)) stopping = true;
    if (!r.complete && g_stop_signal) stopping = true;  // no root to agree with
  }
  log(mine.node, "stopping");
  replay_.reset();
  fed_.reset();
  watcher_->stop();
  watcher_->unlink_records();
  server.stop();
  const auto tree_lost = tree_->lost().size();
  const bool clean = tree_lost == 0;
  tree_.reset();
  ledger_.reset();
  if (!clean) log(mine.node, fmt::format("{} observer(s) were lost during the job", tree_lost));
  peers_lost_ = !clean;
  return 0;
}

}  // namespace scout::scoutd
