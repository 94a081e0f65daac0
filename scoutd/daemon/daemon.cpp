// scoutd's daemon: start-up, the period loop and shut-down (see daemon.hpp).
// run() is a list of init calls, the loop, and fini() in reverse order.
#include "scoutd/daemon/daemon.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "libc3/log.hpp"
#include "ledgerd/client.hpp"
#include "ledgerd/site_config.hpp"
#include "scoutd/daemon/control_server.hpp"
#include "scoutd/observe/proc_info.hpp"
#include "scoutd/wire/runtime_paths.hpp"

namespace scout::scoutd {

using nlohmann::json;
volatile std::sig_atomic_t g_stop_signal = 0;

Daemon::Daemon(ScoutdConfig cfg)
    : cfg_(std::move(cfg)),
      stragglers_({cfg_.straggler_absolute_s, cfg_.straggler_relative, cfg_.straggler_confirmations, 4}),
      comm_stragglers_({cfg_.straggler_absolute_s, cfg_.straggler_relative, cfg_.straggler_confirmations, 4}) {
  detector_.stall_threshold_s = cfg_.stall_threshold_s;
  // Under Slurm, a step that is cancelled (its srun killed, scancel) has
  // every task SIGKILLed by each node's slurmstepd, spread over a moment,
  // and its companion stopped: a death without a fatal-signal record is
  // named only once the other ranks outlived it by a second. Elsewhere (the
  // launcher kills the job only after a rank died) it is named at once.
  detector_.death_confirm_s = cfg_.slurm ? 1.0 : 0.0;
}

Daemon::~Daemon() = default;

void Daemon::log(const std::string& msg) const {
  const std::string node = watcher_ ? watcher_->node()
                           : observers_.size() > static_cast<std::size_t>(me_) ? observers_[static_cast<std::size_t>(me_)].node
                                                                               : std::string("?");
  log::info("{}: {}", node, msg);
}

double Daemon::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void Daemon::init_observers() {
  MPI_Comm_rank(MPI_COMM_WORLD, &me_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  ObserverInfo mine;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  if (cfg_.simulate_nodes) {
    mine.first_rank = static_cast<int>(static_cast<long>(me_) * cfg_.ranks / size_);
    mine.last_rank = static_cast<int>(static_cast<long>(me_ + 1) * cfg_.ranks / size_) - 1;
    mine.node = fmt::format("{}{}", cfg_.node_prefix, me_ + 1);
  } else if (cfg_.slurm) {
    // Which ranks live here is learnt from their records (host field); the
    // node row and observer_lost verdicts carry no rank range.
    const char* n = std::getenv("SLURMD_NODENAME");
    mine.node = !cfg_.node.empty() ? cfg_.node : (n && *n ? n : host);
  } else {
    mine.first_rank = cfg_.first_rank;
    mine.last_rank = cfg_.last_rank;
    mine.node = cfg_.node.empty() ? host : cfg_.node;
  }
  mine.pid = static_cast<int>(getpid());
  // Everyone is alive at start: one allgather of who observes what.
  const wire::Bytes hello = wire::encode_hello(mine.node, mine.first_rank, mine.last_rank, mine.pid);
  const int n = static_cast<int>(hello.size());
  std::vector<std::uint8_t> all(hello.size() * static_cast<std::size_t>(size_));
  MPI_Allgather(hello.data(), n, MPI_BYTE, all.data(), n, MPI_BYTE, MPI_COMM_WORLD);
  for (int k = 0; k < size_; ++k) {
    const auto* p = all.data() + static_cast<std::size_t>(k) * hello.size();
    auto h = wire::decode_hello(wire::Bytes(p, p + hello.size()));
    if (!h) throw std::runtime_error(fmt::format("observer {} sent a malformed hello; expected protocol version {}",
                                                 k, wire::kVersion));
    observers_.push_back({h->node, h->first_rank, h->last_rank, h->pid});
  }
}

void Daemon::init_ledger() {
  // Every observer keeps the job's verdicts in its own ledger (node-local on
  // a real cluster: the epilog of the node a verdict names reads it there).
  // Where several observers share one file (scout-run), the first creates
  // and migrates it alone: a journal-mode change races with other
  // connections. Everyone is alive at start, so the barrier cannot hang.
  sql::JobRow j;
  j.job_id = cfg_.job_id;
  j.uid = getuid();
  j.user = std::getenv("USER") ? std::getenv("USER") : std::to_string(getuid());
  j.launcher = cfg_.simulate_nodes ? "scout-run" : "slurm";
  j.nodes = size_;
  j.ranks = cfg_.ranks;
  auto open = [&] {
    ledger_.emplace(sql::Ledger::open(cfg_.ledger, sql::Ledger::Mode::kReadWrite));
    ledger_->insert_job_if_missing(j);  // before node rows refer to it
  };
  if (me_ == 0) open();
  MPI_Barrier(MPI_COMM_WORLD);
  if (me_ != 0) open();
  const auto& o = observers_[static_cast<std::size_t>(me_)];
  ledger_->upsert_node({cfg_.job_id, o.node, o.pid, o.first_rank, o.last_rank, ""});
  sink_ = std::make_unique<LedgerSink>(*ledger_, cfg_.job_id, cfg_.step_id);
  const std::string vkey_prefix = fmt::format("{}.{}.o{}.{}", cfg_.job_id, cfg_.step_id, me_, getpid());
  decider_ = std::make_unique<Decider>(cfg_.job_id, cfg_.step_id, vkey_prefix, book_, *sink_,
                                       Decider::Hooks{[] { return sql::now_iso8601(); },
                                                      [this](const std::string& m) { log(m); }});
  replicas_ = std::make_unique<ReplicaWriter>(*sink_, vkey_prefix, [this](const std::string& m) { log(m); });
}

void Daemon::init_watcher() {
  const auto& mine = observers_[static_cast<std::size_t>(me_)];
  const std::uint32_t step_kind = coll_kind_from_name(cfg_.step_collective);
  if (cfg_.slurm)  // ranks are found by their node name, wherever Slurm put them
    watcher_ = std::make_unique<RankWatcher>(cfg_.job_id, cfg_.step_id, 0, cfg_.ranks - 1,
                                             mine.node, cfg_.tick_s, mine.node, step_kind);
  else
    watcher_ = std::make_unique<RankWatcher>(cfg_.job_id, cfg_.step_id, mine.first_rank,
                                             mine.last_rank, mine.node, cfg_.tick_s, "", step_kind);
  tree_ = std::make_unique<c3::TreeRound>(MPI_COMM_WORLD, c3::TreeRound::Options{cfg_.round_timeout_s});
}

void Daemon::init_replay() {
  if (cfg_.replay) {
    replay::ReplayOptions ro;
    ro.cores = cfg_.replay_cores;
    for (auto& n : cfg_.replay_recipes)
      if (auto r = replay::recipe_from_name(n)) ro.recipes.push_back(*r);
    ro.budget = cfg_.replay_budget;
    ro.idle_priority = cfg_.replay_sched == "idle";
    replay::FaultInjector faults;
#ifdef SCOUT_FAULT_INJECTION
    if (const char* f = std::getenv("SCOUT_REPLAY_FAULT"); f && *f) {
      try {
        faults = replay::FaultInjector(replay::parse_fault_specs(f));
        log(fmt::format("test fault injection in replay: {}", f));
      } catch (const std::exception& e) {
        log(fmt::format("{}; no fault injected", e.what()));
      }
    }
#endif
    replay_ = std::make_unique<replay::ReplayRunner>(watcher_->node(), ro, std::move(faults));
    coordinator_.emplace(CoordinatorOptions{cfg_.replay_interval_s, cfg_.replay_reruns, cfg_.replay_timeout_s});
  }
  if (me_ == 0) start_checkpoint_watcher();
  if (cfg_.learn) {
    fed_ = std::make_unique<FedClient>(learn_options(), learn::MemAEShape{kTelemetryFeatures, 32, 8, 20});
    gpu_telemetry_ = std::make_unique<c3::GpuHealth>();
    if (!gpu_telemetry_->available()) gpu_telemetry_.reset();  // no NVML: the GPU features stay 0
  }
  if (cfg_.gpu_health_interval_s > 0) {
    gpu_health_ = std::make_unique<GpuHealthWatch>(watcher_->node());
    if (!gpu_health_->available()) {
      log(fmt::format("GPU health not watched: {}", gpu_health_->why_unavailable()));
      gpu_health_.reset();
    }
  }
}

void Daemon::init_control() {
  const std::string root = cfg_.runtime_dir.empty() ? default_runtime_root() : cfg_.runtime_dir;
  const std::string job_dir = cfg_.runtime_dir.empty() ? job_runtime_dir(root, cfg_.job_id) : root;
  std::error_code ec;
  std::filesystem::create_directories(job_dir, ec);
  ::chmod(job_dir.c_str(), 0700);
  ControlProviders providers{[this] { return status_json(); }, [this] { return verdicts_json(); },
                             cfg_.job_id, watcher_->node(), {}};
  if (cfg_.replay)
    providers.replay = [this] {
      replay_demand_ = true;
      return std::string();
    };
  server_ = std::make_unique<ControlServer>(control_socket_path(job_dir, watcher_->node()), providers);
  try {
    server_->start();
  } catch (const std::exception& e) {
    log(fmt::format("control socket {}: {}; continuing without it", server_->path(), e.what()));
  }
}

void Daemon::init_forwarder() {
  ledgerd::SiteConfig site;
  try {
    site = ledgerd::load_site_config();
  } catch (const std::exception& e) {
    log(fmt::format("site configuration: {}; verdicts are not forwarded to a ledger service", e.what()));
    return;
  }
  if (site.ledgerd.empty()) return;  // no ledger service at this site
  const ledgerd::Endpoint ep = site.ledgerd;
  forwarder_ = std::make_unique<Forwarder>(
      cfg_.job_id,
      [site](const std::string& job, const json& verdicts) {
        ledgerd::LedgerdClient c(site, 10);
        json r = c.request({{"op", "submit"}, {"job", job}, {"verdicts", verdicts}});
        if (!r.value("ok", false)) throw std::runtime_error("refused: " + r.value("error", std::string("?")));
      },
      [this](const std::string& m) { log(m); });
  log(fmt::format("forwarding verdicts to scout-ledgerd at {}:{}", ep.host, ep.port));
}

void Daemon::forward(const json& events) {
  if (!forwarder_) return;
  if (!forwarded_book_) {  // a new deciding observer: everything it knows, once (idempotent)
    forwarded_book_ = true;
    forwarder_->take(book_.snapshot());
  }
  forwarder_->take(events);
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
              {"median_compute_s", median_compute_s_}, {"ranks", ranks},
              {"wire_refused", wire::stats().malformed + wire::stats().wrong_version}};
}

json Daemon::verdicts_json() {
  std::lock_guard lk(mu_);
  return json(book_.verdicts());
}

void Daemon::announce_ranks() {
  for (auto [rank, pid] : watcher_->take_new_attachments()) {
    try {
      ledger_->upsert_rank(cfg_.job_id, cfg_.step_id, rank, watcher_->node(), pid);
    } catch (const std::exception& e) {
      log(e.what());
    }
  }
}

int Daemon::run() {
  init_observers();
  init_ledger();
  init_watcher();
  init_replay();
  init_control();
  init_forwarder();
  watcher_->start();
  const auto& mine = observers_[static_cast<std::size_t>(me_)];
  // Under Slurm the ranks are found by node name as they appear (no block).
  const std::string which = mine.last_rank >= mine.first_rank
                                ? fmt::format("ranks {}-{}", mine.first_rank, mine.last_rank)
                                : fmt::format("the ranks Slurm places on {}", mine.node);
  log(fmt::format("observing {} of job {} step {} (observer {}/{})", which, cfg_.job_id, cfg_.step_id,
                  me_ + 1, size_));
  if (cfg_.slurm) {  // the only line on stdout: the plugin's companion_wait reads it through srun
    std::printf("scoutd ready %s\n", mine.node.c_str());
    std::fflush(stdout);
  }
  const auto length = std::chrono::duration<double>(cfg_.round_period_s);
  for (;;) {
    const auto next = std::chrono::steady_clock::now() + length;
    while (std::chrono::steady_clock::now() < next && !g_stop_signal)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!period()) break;
  }
  log("stopping");
  final_flush();
  fini();
  return 0;
}

void Daemon::fini() {
  if (forwarder_) {
    if (const auto left = forwarder_->drain(5.0))
      log(fmt::format("ledgerd: {} verdict(s) not forwarded; the epilog forwards them from the spool", left));
    forwarder_.reset();
  }
  replay_.reset();
  fed_.reset();
  watcher_->stop();
  watcher_->unlink_records();
  if (server_) server_->stop();
  const auto tree_lost = tree_->lost().size();
  tree_.reset();
  decider_.reset();
  replicas_.reset();
  sink_.reset();
  ledger_.reset();
  if (tree_lost) log(fmt::format("{} observer(s) were lost during the job", tree_lost));
  if (const auto refused = wire::stats().malformed + wire::stats().wrong_version)
    log(fmt::format("wire: {} malformed or wrong-version peer message(s) were dropped", refused));
  peers_lost_ = tree_lost != 0;
}

}  // namespace scout::scoutd
