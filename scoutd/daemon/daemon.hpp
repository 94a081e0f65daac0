// scoutd's daemon: it only wires the parts together. Every round period a
// small trigger reduction runs over the observer world (wire/, libc3's
// TreeRound); when someone reports trouble, the full evidence gather runs
// and the deciding observer hands it to the detectors (detect/) and their
// drafts to the decider (decide/), which commits verdicts to the ledger
// before they go out on the down message; every observer applies the down
// message to its incident book, so a new root carries on where a lost one
// stopped. Replay, checkpoints and federated learning run beside (beside/).
// Threads: the main thread runs rounds and owns everything below; the
// control server's thread reads status and verdicts under mu_ only; the
// watcher, replay and learner threads are inside their own classes.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "libc3/tree_round.hpp"
#include "replay/runner.hpp"
#include "scoutd/beside/checkpoints.hpp"
#include "scoutd/beside/fed_learner.hpp"
#include "scoutd/beside/forwarder.hpp"
#include "scoutd/beside/gpu_health_watch.hpp"
#include "scoutd/beside/replay_coordinator.hpp"
#include "scoutd/daemon/config.hpp"
#include "scoutd/daemon/ledger_sink.hpp"
#include "scoutd/decide/decider.hpp"
#include "scoutd/decide/incident_book.hpp"
#include "scoutd/decide/replica_writer.hpp"
#include "scoutd/detect/output_tracker.hpp"
#include "scoutd/detect/progress_detector.hpp"
#include "scoutd/detect/straggler_detector.hpp"
#include "scoutd/detect/late_sender.hpp"
#include "scoutd/observe/rank_watcher.hpp"
#include "scoutd/observe/telemetry.hpp"
#include "scoutd/wire/peer_messages.hpp"
#include "sql/ledger.hpp"

namespace scout::scoutd {

extern volatile std::sig_atomic_t g_stop_signal;

class ControlServer;

struct ObserverInfo {
  std::string node;
  int first_rank = 0, last_rank = -1;
  int pid = 0;
};

class Daemon {
 public:
  explicit Daemon(ScoutdConfig cfg);
  ~Daemon();
  int run();  // returns the exit status
  // MPI_Finalize waits for every member; after a loss it would never return.
  bool peers_lost() const noexcept { return peers_lost_; }

 private:
  // daemon.cpp: start-up and shut-down, in this order and in reverse.
  void init_observers();
  void init_ledger();
  void init_watcher();
  void init_replay();
  void init_control();
  void init_forwarder();
  void forward(const nlohmann::json& events);  // deciding observer: after each commit
  void fini();
  nlohmann::json status_json();
  nlohmann::json verdicts_json();
  void announce_ranks();
  void log(const std::string& msg) const;
  double now_s() const;

  // rounds.cpp: one period's rounds, and what the deciding observer decides.
  bool period();  // false: stop
  void gather_round();
  void learn_round();
  wire::Bytes decide_trigger(const wire::Bytes& acc, const std::vector<int>& lost);
  wire::Bytes decide_gather(const wire::Bytes& acc);
  wire::Bytes decide_learn(const wire::Bytes& acc);
  void apply_down(const nlohmann::json& down);
  void note_lost(const std::vector<int>& newly_lost);
  void note_membership(const c3::RoundResult& r);
  void final_flush();

  // beside.cpp: replay coordination and checkpoint certification.
  void decide_replay(nlohmann::json& down, const std::vector<RankEvidence>* ev);
  void record_replay_step(ReplayCoordinator::Step& step, nlohmann::json& down);
  void start_checkpoint_watcher();
  void certify_checkpoints();
  void apply_replay(const nlohmann::json& down);
  std::vector<int> ranks_of_observer(int observer);
  LearnOptions learn_options() const;

  ScoutdConfig cfg_;
  int me_ = 0, size_ = 0;
  std::vector<ObserverInfo> observers_;
  std::unique_ptr<RankWatcher> watcher_;
  std::unique_ptr<ControlServer> server_;
  std::unique_ptr<c3::TreeRound> tree_;
  std::optional<sql::Ledger> ledger_;
  std::unique_ptr<LedgerSink> sink_;
  DetectorOptions detector_;
  StragglerTracker stragglers_;               // root only: confirmation state
  CommTracker comm_stragglers_;
  LateSenderTracker late_senders_;
  OutputTracker outputs_;                     // root only: signed collective outputs

  std::mutex mu_;                              // guards book_, rounds_, median_compute_s_
  IncidentBook book_;                          // replicated on every observer
  std::unique_ptr<Decider> decider_;           // used at the deciding observer
  std::unique_ptr<ReplicaWriter> replicas_;    // the others' verdicts, into this node's ledger
  std::unique_ptr<Forwarder> forwarder_;       // to scout-ledgerd, when the site has one
  bool forwarded_book_ = false;                // this observer forwarded its whole book once
  bool in_minority_ = false;
  std::uint64_t rounds_ = 0;
  bool book_behind_ = false;                   // the root's digest differed from ours
  bool peers_lost_ = false;
  double median_compute_s_ = 0;               // from the last gather, for scores

  std::unique_ptr<replay::ReplayRunner> replay_;     // this node's replay thread
  std::optional<ReplayCoordinator> coordinator_;     // deciding observer only
  std::atomic<bool> replay_demand_{false};           // scoutctl replay (any observer)
  bool straggler_demand_ = false;                    // root: a compute straggler confirmed
  std::unique_ptr<CheckpointWatcher> ckpt_;          // the deciding observer
  bool ckpt_tried_ = false;                          // start_checkpoint_watcher() ran
  std::map<std::string, std::vector<int>> node_ranks_;  // root: from the last gather
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  double last_outsig_gather_s_ = 0;
  double last_p2p_gather_s_ = 0;

  // GPU health (NVML), polled in period(); findings ride on gathers.
  std::unique_ptr<GpuHealthWatch> gpu_health_;
  std::unique_ptr<c3::GpuHealth> gpu_telemetry_;  // NVML for the learner's GPU features (null: none)
  double last_gpu_poll_s_ = 0;

  // Federated telemetry outlier detection.
  std::unique_ptr<FedClient> fed_;
  std::optional<FedServer> fed_server_;      // deciding observer
  TelemetrySampler sampler_;
  double last_window_s_ = 0, last_learn_s_ = 0;
  long learn_logged_round_ = -1;
};

}  // namespace scout::scoutd
