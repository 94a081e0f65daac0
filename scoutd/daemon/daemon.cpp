// scoutd's daemon: start-up, the period loop and shut-down (see daemon.hpp).
// run() is a list of init calls, the loop, and fini() in reverse order.
#include "scoutd/daemon/daemon.hpp"

#include <sys/stat.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "common/log.hpp"
#include "ledgerd/client.hpp"
#include "ledgerd/site_config.hpp"
#include "scoutd/daemon/control_server.hpp"
#include "scoutd/detect/stack_classes.hpp"
#include "scoutd/round/parts.hpp"
#include "common/proc_info.hpp"
#include "common/runtime_paths.hpp"

namespace scout::scoutd {

using nlohmann::json;
volatile std::sig_atomic_t g_stop_signal = 0;

Daemon::Daemon(ScoutdConfig cfg) : cfg_(std::move(cfg)), ctx_(cfg_) {
  ctx_.now = [t0 = std::chrono::steady_clock::now()] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  ctx_.log = [this](const std::string& m) { log(m); };
  ctx_.warn = [this](const std::string& m) { warn(m); };
  ctx_.record_tune = [this](const json& applied, std::uint64_t version) { record_tune(applied, version); };
  ctx_.now_iso = [] { return sql::now_iso8601(); };
  ctx_.stopping = [] { return g_stop_signal != 0; };
  ctx_.round = [this](const c3::Bytes& up, const c3::TreeRound::Combine& c, const c3::TreeRound::Decide& d) {
    auto r = tree_->run(up, c, d);
    engine_->note(r);
    return r;
  };
}

Daemon::~Daemon() = default;

std::string Daemon::node_name() const {
  const auto& obs = ctx_.observers;
  return watcher_ ? watcher_->node()
         : obs.size() > static_cast<std::size_t>(ctx_.me) ? obs[static_cast<std::size_t>(ctx_.me)].node
                                                          : std::string("?");
}

void Daemon::log(const std::string& msg) const { log::info("{}: {}", node_name(), msg); }

void Daemon::warn(const std::string& msg) const { log::warning("{}: {}", node_name(), msg); }

void Daemon::init_observers() {
  MPI_Comm_rank(MPI_COMM_WORLD, &ctx_.me);
  MPI_Comm_size(MPI_COMM_WORLD, &ctx_.size);
  const int me = ctx_.me, size = ctx_.size;
  ObserverInfo mine;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  if (cfg_.simulate_nodes) {
    mine.first_rank = static_cast<int>(static_cast<long>(me) * cfg_.ranks / size);
    mine.last_rank = static_cast<int>(static_cast<long>(me + 1) * cfg_.ranks / size) - 1;
    mine.node = fmt::format("{}{}", cfg_.node_prefix, me + 1);
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
  std::vector<std::uint8_t> all(hello.size() * static_cast<std::size_t>(size));
  MPI_Allgather(hello.data(), n, MPI_BYTE, all.data(), n, MPI_BYTE, MPI_COMM_WORLD);
  for (int k = 0; k < size; ++k) {
    const auto* p = all.data() + static_cast<std::size_t>(k) * hello.size();
    auto h = wire::decode_hello(wire::Bytes(p, p + hello.size()));
    if (!h) throw std::runtime_error(fmt::format("observer {} sent a malformed hello; expected protocol version {}",
                                                 k, wire::kVersion));
    ctx_.observers.push_back({h->node, h->first_rank, h->last_rank, h->pid});
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
  j.nodes = ctx_.size;
  j.ranks = cfg_.ranks;
  auto open = [&] {
    ledger_.emplace(sql::Ledger::open(cfg_.ledger, sql::Ledger::Mode::kReadWrite));
    ledger_->insert_job_if_missing(j);  // before node rows refer to it
  };
  if (ctx_.me == 0) open();
  MPI_Barrier(MPI_COMM_WORLD);
  if (ctx_.me != 0) open();
  const auto& o = ctx_.observers[static_cast<std::size_t>(ctx_.me)];
  ledger_->upsert_node({cfg_.job_id, o.node, o.pid, o.first_rank, o.last_rank, ""});
  sink_ = std::make_unique<LedgerSink>(*ledger_, cfg_.job_id, cfg_.step_id);
}

void Daemon::init_watcher() {
  const auto& mine = ctx_.observers[static_cast<std::size_t>(ctx_.me)];
  const std::uint32_t step_kind = coll_kind_from_name(cfg_.step_collective);
  if (cfg_.slurm)  // ranks are found by their node name, wherever Slurm put them
    watcher_ = std::make_unique<RankWatcher>(cfg_.job_id, cfg_.step_id, 0, cfg_.ranks - 1,
                                             mine.node, cfg_.tick_s, mine.node, step_kind);
  else
    watcher_ = std::make_unique<RankWatcher>(cfg_.job_id, cfg_.step_id, mine.first_rank,
                                             mine.last_rank, mine.node, cfg_.tick_s, "", step_kind);
  tree_ = std::make_unique<c3::TreeRound>(MPI_COMM_WORLD, c3::TreeRound::Options{cfg_.round_timeout_s});
  ctx_.ranks = watcher_.get();
  ctx_.tree = tree_.get();
}

// The participants, in the order they run each round (see round/parts.hpp):
// the desk first (it records lost observers before anyone decides), the
// learner's and GPU drafts before the detectors', replay after them (its
// start may follow a straggler confirmed in this decision's gather).
void Daemon::init_participants() {
  const std::string vkey_prefix = fmt::format("{}.{}.o{}.{}", cfg_.job_id, cfg_.step_id, ctx_.me, getpid());
  engine_ = std::make_unique<RoundEngine>(
      ctx_, std::make_unique<Incidents>(ctx_, *sink_, vkey_prefix, make_forwarder()));
  auto& desk = engine_->desk();
  if (cfg_.learn) engine_->add(make_learner(ctx_, desk));
  if (cfg_.gpu_health_interval_s > 0) engine_->add(make_gpu_health(ctx_, desk));
  engine_->add(make_tuning(ctx_));
  engine_->add(make_progress(ctx_, desk));
  engine_->add(make_outputs(ctx_, desk));
  engine_->add(make_stragglers(ctx_, desk));
  if (cfg_.replay) engine_->add(make_replay(ctx_, desk, *ledger_));
  if (!cfg_.ckpt_dir.empty()) engine_->add(make_checkpoints(ctx_, *ledger_));
}

void Daemon::init_control() {
  const std::string root = cfg_.runtime_dir.empty() ? common::default_runtime_root() : cfg_.runtime_dir;
  const std::string job_dir = cfg_.runtime_dir.empty() ? common::job_runtime_dir(root, cfg_.job_id) : root;
  std::error_code ec;
  std::filesystem::create_directories(job_dir, ec);
  ::chmod(job_dir.c_str(), 0700);
  stack_helper_ = cfg_.stack_helper.empty() ? find_stack_helper(SCOUT_SBINDIR "/scout-stack") : cfg_.stack_helper;
  ControlProviders providers{[this] { return status_json(); }, [this] { return engine_->desk().verdicts_json(); },
                             cfg_.job_id, watcher_->node(), {}};
  if (cfg_.stacks) providers.stacks = [this] { return stacks_now(); };
  providers.tune = [this](const std::vector<std::pair<std::string, std::string>>& changes, long uid) {
    return queue_tune(changes, uid);
  };
  if (cfg_.replay)
    providers.replay = [this] {
      ctx_.replay_demand = true;
      return std::string();
    };
  server_ = std::make_unique<ControlServer>(common::control_socket_path(job_dir, watcher_->node()), providers);
  try {
    server_->start();
  } catch (const std::exception& e) {
    log(fmt::format("control socket {}: {}; continuing without it", server_->path(), e.what()));
  }
}

std::unique_ptr<Forwarder> Daemon::make_forwarder() {
  ledgerd::SiteConfig site;
  try {
    site = ledgerd::load_site_config();
  } catch (const std::exception& e) {
    warn(fmt::format("site configuration: {}; verdicts are not forwarded to a ledger service", e.what()));
    return nullptr;
  }
  if (site.ledgerd.empty()) return nullptr;  // no ledger service at this site
  const ledgerd::Endpoint ep = site.ledgerd;
  auto forwarder = std::make_unique<Forwarder>(
      cfg_.job_id,
      [site](const std::string& job, const json& verdicts) {
        ledgerd::LedgerdClient c(site, 10);
        json r = c.request({{"op", "submit"}, {"job", job}, {"verdicts", verdicts}});
        if (!r.value("ok", false)) throw std::runtime_error("refused: " + r.value("error", std::string("?")));
      },
      [this](const std::string& m) { warn(m); },
      [site, job = cfg_.job_id, node = cfg_.node](std::size_t pending, double oldest_s) {
        ledgerd::LedgerdClient c(site, 10);
        json r = c.request({{"op", "backlog"}, {"job", job}, {"node", node}, {"pending", pending},
                            {"oldest_s", oldest_s}});
        if (!r.value("ok", false)) throw std::runtime_error("refused: " + r.value("error", std::string("?")));
      });
  log(fmt::format("forwarding verdicts to scout-ledgerd at {}:{}", ep.host, ep.port));
  return forwarder;
}

// scoutctl stacks: every live rank of this node, now, within a total budget
// (the control session waits for it).
json Daemon::stacks_now() {
  std::vector<RankStack> taken;
  json ranks = json::array();
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(4 * cfg_.stack_budget_s);
  for (auto& w : watcher_->live_ranks()) {
    RankStack e;
    e.rank = w.rank;
    if (std::chrono::steady_clock::now() >= until) {
      e.error = "the request's time budget was spent";
    } else {
      watcher_->set_tracing(w.rank, true);
      TakenStack t = take_stack(stack_helper_, w.pid, cfg_.stack_budget_s);
      watcher_->set_tracing(w.rank, false);
      e.frames = std::move(t.frames);
      e.error = std::move(t.error);
    }
    json r = {{"rank", w.rank}, {"pid", w.pid}};
    if (e.error.empty()) r["frames"] = e.frames;
    else r["error"] = e.error;
    ranks.push_back(std::move(r));
    taken.push_back(std::move(e));
  }
  return {{"job", cfg_.job_id}, {"node", watcher_->node()}, {"ranks", ranks}, {"classes", stack_classes(taken)}};
}

// scoutctl set: a checked request, queued for the deciding observer (the
// Tuning participant carries it). Bounded: a client cannot queue without end.
std::string Daemon::queue_tune(const std::vector<std::pair<std::string, std::string>>& changes, long uid) {
  static std::uint64_t n = 0;
  RoundContext::TuneRequest r;
  r.uid = uid;
  r.user = uid >= 0 ? std::to_string(uid) : "?";
  if (uid >= 0) {
    passwd pw{}, *res = nullptr;
    char buf[1024];
    if (getpwuid_r(static_cast<uid_t>(uid), &pw, buf, sizeof buf, &res) == 0 && res) r.user = res->pw_name;
  }
  r.changes = changes;
  std::lock_guard lk(ctx_.tune_mu);
  if (ctx_.tune_pending.size() >= 16) return "16 requests are already waiting for the deciding observer; try again";
  r.id = fmt::format("{}.{}.{}", watcher_->node(), getpid(), ++n);
  log(fmt::format("settings request {} from {} (uid {}) queued", r.id, r.user, uid));
  ctx_.tune_pending.push_back(std::move(r));
  return "";
}

void Daemon::record_tune(const json& applied, std::uint64_t version) {
  for (auto& c : applied.value("changes", json::array())) {
    if (!c.is_object()) continue;
    sql::SettingRow row{cfg_.job_id, cfg_.step_id, static_cast<std::int64_t>(version), c.value("key", std::string()),
                        c.value("old", std::string()), c.value("new", std::string()),
                        applied.value("uid", json(-1)).is_number_integer() ? applied["uid"].get<std::int64_t>() : -1,
                        applied.value("user", std::string()), applied.value("node", std::string()), ""};
    try {
      ledger_->insert_setting(row);
    } catch (const std::exception& e) {
      warn(fmt::format("ledger: settings version {} not recorded: {}", version, e.what()));
    }
  }
}

json Daemon::status_json() {
  json ranks = json::array();
  for (auto& e : watcher_->evidence()) {
    json r = e;
    r["collective"] = c3::coll_name(e.kind);
    r["process"] = common::describe_state(e.state);
    r["score"] = 0.0;
    ranks.push_back(std::move(r));
  }
  json st = {{"learn", nullptr}, {"job", cfg_.job_id}, {"step", cfg_.step_id},
             {"node", watcher_->node()}, {"first_rank", watcher_->first_rank()},
             {"last_rank", watcher_->last_rank()}, {"observers", ctx_.size},
             {"observers_alive", tree_ ? tree_->alive().size() : 0}, {"round", 0},
             {"stall_threshold_s", cfg_.stall_threshold_s}, {"median_compute_s", 0.0},
             {"ranks", std::move(ranks)},
             {"wire_refused", wire::stats().malformed + wire::stats().wrong_version}};
  engine_->status(st);
  if (st.contains("settings") && st["settings"].is_object() && st["settings"].contains("stall_threshold"))
    st["stall_threshold_s"] = st["settings"]["stall_threshold"];  // the value in force
  return st;
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

bool Daemon::period() {
  announce_ranks();
  if (stacks_) stacks_->set_after(ctx_.tun.stall_threshold_s / 2);
  for (std::optional<RoundEngine::Round> r = engine_->begin_period(); r;)
    r = engine_->finished(tree_->run(r->up, r->combine, r->decide));
  return engine_->go_on();
}

int Daemon::run() {
  init_observers();
  init_ledger();
  init_watcher();
  init_participants();
  init_control();
  watcher_->start();
  if (cfg_.stacks) {
    stacks_ = std::make_unique<StackSampler>(*watcher_, stack_helper_, cfg_.stall_threshold_s / 2, cfg_.stack_budget_s);
    stacks_->start();
  }
  const auto& mine = ctx_.observers[static_cast<std::size_t>(ctx_.me)];
  // Under Slurm the ranks are found by node name as they appear (no block).
  const std::string which = mine.last_rank >= mine.first_rank
                                ? fmt::format("ranks {}-{}", mine.first_rank, mine.last_rank)
                                : fmt::format("the ranks Slurm places on {}", mine.node);
  log(fmt::format("observing {} of job {} step {} (observer {}/{})", which, cfg_.job_id, cfg_.step_id,
                  ctx_.me + 1, ctx_.size));
  if (cfg_.slurm) {  // the only line on stdout: the plugin's companion_wait reads it through srun
    std::printf("scoutd ready %s\n", mine.node.c_str());
    std::fflush(stdout);
  }
  const auto length = std::chrono::duration<double>(cfg_.round_period_s);
  for (;;) {
    const auto next = std::chrono::steady_clock::now() + length;
    while (std::chrono::steady_clock::now() < next && !g_stop_signal)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (g_stop_signal && watcher_) watcher_->refresh();  // a job shorter than a tick: its ranks still seen
    if (!job_stopping_logged_ && RankWatcher::job_stopping_ns() > 0) {
      job_stopping_logged_ = true;
      log("the launcher is stopping the job: ranks that go away from now on are not taken for crashes");
    }
    if (!period()) break;
  }
  log("stopping");
  engine_->desk().final_flush();
  fini();
  return 0;
}

void Daemon::fini() {
  if (const auto left = engine_->desk().drain_forwarder(5.0))
    log(fmt::format("ledgerd: {} verdict(s) not forwarded; the epilog forwards them from the spool", left));
  if (server_) server_->stop();  // before the participants its status reads go
  engine_.reset();
  stacks_.reset();
  watcher_->stop();
  watcher_->unlink_records();
  const auto tree_lost = tree_->lost().size();
  ctx_.tree = nullptr;
  tree_.reset();
  sink_.reset();
  ledger_.reset();
  if (tree_lost) log(fmt::format("{} observer(s) were lost during the job", tree_lost));
  if (const auto refused = wire::stats().malformed + wire::stats().wrong_version)
    log(fmt::format("wire: {} malformed or wrong-version peer message(s) were dropped", refused));
  peers_lost_ = tree_lost != 0;
}

}  // namespace scout::scoutd
