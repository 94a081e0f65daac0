// scoutd's daemon: it only wires the parts together. Every round period a
// small trigger reduction runs over the observer world (wire/, libc3's
// TreeRound); when someone reports trouble, the evidence gather runs. Each
// concern that takes part in rounds is a participant (round/participant.hpp);
// the round engine (round/engine.hpp) runs their list: what each adds to the
// trigger and the gather, what the deciding observer decides, what every
// observer reads from the down message. The daemon builds them and runs the
// engine's rounds over MPI. The incidents desk (round/incidents.hpp) commits the
// verdicts to the ledger before they go out on the down message; every
// observer applies the down message to its incident book, so a new root
// carries on where a lost one stopped.
// Threads: the main thread runs rounds and owns everything below; the
// control server's thread reads status (participants' status() are
// thread-safe) and verdicts; the watcher, replay, learner and forwarder
// threads are inside their own classes.
#pragma once

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "libc3/tree_round.hpp"
#include "scoutd/daemon/config.hpp"
#include "scoutd/daemon/ledger_sink.hpp"
#include "scoutd/observe/rank_watcher.hpp"
#include "scoutd/round/engine.hpp"
#include "scoutd/round/participant.hpp"
#include "scoutd/stack/stack_sampler.hpp"
#include "scoutd/wire/peer_messages.hpp"
#include "sql/ledger.hpp"

namespace scout::scoutd {

extern volatile std::sig_atomic_t g_stop_signal;

class ControlServer;

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
  void init_participants();
  void init_control();
  std::unique_ptr<Forwarder> make_forwarder();
  void fini();
  nlohmann::json status_json();
  nlohmann::json stacks_now();
  std::string queue_tune(const std::vector<std::pair<std::string, std::string>>& changes, long uid);
  void record_tune(const nlohmann::json& applied, std::uint64_t version);
  void announce_ranks();
  void log(const std::string& msg) const;   // info
  void warn(const std::string& msg) const;  // warning: something failed
  std::string node_name() const;

  // One period's rounds (round/engine.hpp) over MPI; false: stop.
  bool period();

  ScoutdConfig cfg_;
  RoundContext ctx_;                               // what the participants share
  std::unique_ptr<RankWatcher> watcher_;
  std::unique_ptr<c3::TreeRound> tree_;
  std::optional<sql::Ledger> ledger_;
  std::unique_ptr<LedgerSink> sink_;
  std::unique_ptr<RoundEngine> engine_;            // the participants and their rounds
  std::unique_ptr<ControlServer> server_;
  std::unique_ptr<StackSampler> stacks_;           // stacks of stalled ranks (off: null)
  std::string stack_helper_;
  bool peers_lost_ = false;
  bool job_stopping_logged_ = false;
};

}  // namespace scout::scoutd
