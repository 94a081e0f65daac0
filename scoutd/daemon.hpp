// scoutd's main loop: every round period, a small trigger reduction over the
// observer world; when someone reports trouble, the full evidence gather and
// the detectors at the root; verdicts go to the ledger (committed) before
// anyone is told about them. All observers keep a copy of the verdicts and
// open incidents, so a new root carries on where a dead one stopped.
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
#include "scoutd/checkpoints.hpp"
#include "scoutd/config.hpp"
#include "scoutd/fed_learner.hpp"
#include "scoutd/telemetry.hpp"
#include "scoutd/replay_coordinator.hpp"
#include "scoutd/hang_detector.hpp"
#include "scoutd/rank_watcher.hpp"
#include "scoutd/straggler_detector.hpp"
#include "sql/ledger.hpp"

namespace scout::scoutd {

extern volatile std::sig_atomic_t g_stop_signal;

struct ObserverInfo {
  std::string node;
  int first_rank = 0, last_rank = -1;
  int pid = 0;
};

class Daemon {
 public:
  explicit Daemon(ScoutdConfig cfg);
  int run();  // returns the exit status
  // MPI_Finalize waits for every member; after a loss it would never return.
  bool peers_lost() const noexcept { return peers_lost_; }

 private:
  void init_observers();
  void init_ledger();
  nlohmann::json status_json();
  nlohmann::json verdicts_json();
  void announce_ranks();
  c3::Bytes decide_trigger(const c3::Bytes& acc, const std::vector<int>& lost);
  c3::Bytes decide_gather(const c3::Bytes& acc);
  void record_draft(const VerdictDraft& d, nlohmann::json& events);
  void apply_events(const nlohmann::json& down);
  // Replay and checkpoints (decide_* run at the deciding observer).
  void start_replay();
  void decide_replay(nlohmann::json& down, const std::vector<RankEvidence>* ev);
  void record_replay_step(ReplayCoordinator::Step& step, nlohmann::json& down);
  void start_checkpoint_watcher();
  void certify_checkpoints();
  void apply_replay(const nlohmann::json& down);
  std::vector<int> ranks_of_observer(int observer);
  double now_s() const;

  ScoutdConfig cfg_;
  int me_ = 0, size_ = 0;
  std::vector<ObserverInfo> observers_;
  std::unique_ptr<RankWatcher> watcher_;
  std::unique_ptr<c3::TreeRound> tree_;
  std::optional<sql::Ledger> ledger_;
  DetectorOptions detector_;
  StragglerTracker stragglers_;               // root only: confirmation state
  CommTracker comm_stragglers_;
  OutputTracker outputs_;                     // root only: signed collective outputs

  std::mutex mu_;                              // guards the replicated state below
  std::vector<nlohmann::json> verdicts_;       // every verdict of the job, by id
  std::map<std::string, std::int64_t> open_;   // incident key -> verdict id
  std::set<int> lost_unrecorded_;              // lost observers without a verdict yet
  std::map<std::string, int> pending_inconclusive_;  // root only: key -> gathers seen
  std::uint64_t rounds_ = 0;
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

  // Federated telemetry outlier detection.
  std::unique_ptr<FedClient> fed_;
  std::optional<FedServer> fed_server_;      // deciding observer
  TelemetrySampler sampler_;
  double last_window_s_ = 0, last_learn_s_ = 0;
  long learn_logged_round_ = -1;
  LearnOptions learn_options() const;
  c3::Bytes decide_learn(const c3::Bytes& acc);
};

}  // namespace scout::scoutd
