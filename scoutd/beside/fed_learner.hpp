// Federated outlier detection on node telemetry. Every scoutd is a client:
// it keeps its recent telemetry windows, trains the shared MemAE on them in a
// background thread from the latest global model, and scores each new window
// with the global model. Rounds run over the scoutd world: each client sends
// what it has ready (a model update, or nothing if its training has not
// finished: it is left out of that round, never waited on), the sums of its
// new windows' features (a federated scaler) and a histogram of its windows'
// scores (a federated threshold: a high quantile of the merged histogram,
// times a margin). Scaler and threshold settle during the warm-up rounds;
// then the scaler is frozen and the threshold can only come down (to the
// largest estimate of the last three rounds, when lower: a warm-up under a
// saturated host does not freeze a bar many times too high), so an anomaly
// cannot raise its own bar. The deciding
// observer aggregates (--learn-aggregation; bench/fedad measured the
// choice) and broadcasts the global model, scaler and threshold. With the
// personalised aggregation (the default) each node scores with the shared
// encoder and decoder and a memory it adapted to its own windows.
// A rank above the threshold for K consecutive windows is flagged; the flag
// stays pending while the rank stays above, and is withdrawn when it comes
// back under the threshold before the deciding observer took it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "learn/aggregate.hpp"
#include "learn/memae.hpp"
#include "scoutd/beside/anomaly_flag.hpp"
#include "scoutd/detect/verdict_draft.hpp"
#include "scoutd/observe/telemetry.hpp"

namespace scout::scoutd {

struct LearnOptions {
  bool on = true;
  double window_s = 10;      // telemetry window
  double round_s = 60;       // federated round period
  int warmup_rounds = 3;     // rounds before windows are scored
  int consecutive = 3;       // K windows above the threshold
  double quantile = 0.995;   // of the merged score histogram
  double margin = 1.5;       // threshold = quantile x margin
  int local_epochs = 5;
  std::size_t max_windows = 4000;  // kept per client
  std::uint64_t seed = 1;
  // How the deciding observer merges the updates (--learn-aggregation).
  // personalised: clustered memory with a server Adam step, and each node
  // scores with its own copy whose memory it adapted to its own windows.
  learn::Aggregation aggregation = learn::Aggregation::kPersonalised;
  long personalise_steps = 200;
};

inline constexpr int kScoreBins = 64;  // log-spaced, 1e-4 .. 1e4

class FedClient {
 public:
  FedClient(LearnOptions o, learn::MemAEShape shape);
  ~FedClient();
  FedClient(const FedClient&) = delete;
  FedClient& operator=(const FedClient&) = delete;

  // New windows: kept for training; scored once the model is warm.
  void add_windows(const std::vector<TelemetryWindow>& ws);
  // This client's contribution to a round (doubles).
  std::vector<double> contribution();
  // The round's result from the deciding observer.
  void apply_global(const std::vector<double>& down);
  std::vector<AnomalyFlag> take_flags();
  // Flags taken for a gather that did not record them (the gather was
  // incomplete, or the deciding observer held them: the ranks above were
  // no minority): pending again, unless their rank came back under the
  // threshold since (withdrawn, never reported late) or has a newer flag.
  void put_back(std::vector<AnomalyFlag> flags);
  std::size_t pending_flags() const;
  // The latest batch of scored windows (one per rank of this node): how
  // many were scored and how many were above the threshold. The deciding
  // observer sums them over the job: flags are taken only while the ranks
  // above are a minority (telemetry_consensus).
  struct Scored {
    std::uint32_t scored = 0, above = 0;
  };
  Scored last_scored() const;
  nlohmann::json status() const;
  std::uint64_t model_signature() const;
  long round() const;

 private:
  void train_loop();
  const learn::MemAE& scorer() const { return personal_ ? *personal_ : global_; }
  LearnOptions opt_;
  learn::MemAEShape shape_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  learn::MemAE global_;
  bool have_global_ = false;
  long round_ = 0;
  double threshold_ = 0;
  learn::Vec mean_, sd_;
  std::vector<std::vector<double>> windows_;     // raw features, newest last
  std::vector<double> new_sum_, new_sumsq_;
  double new_count_ = 0;
  std::map<int, int> above_;                     // rank -> consecutive windows
  std::map<int, bool> flagged_;
  std::vector<AnomalyFlag> flags_;                // pending: only ranks still above
  Scored scored_{};
  std::optional<learn::MemAE> personal_;         // the node's own memory (personalised); scores when present
  std::optional<learn::MemAE> update_;           // trained, not yet sent
  double update_samples_ = 0;
  learn::Vec update_usage_;
  bool train_requested_ = false, stop_ = false;
  std::thread thread_;
};

// The deciding observer's side: merges contributions into the next global.
class FedServer {
 public:
  FedServer(LearnOptions o, learn::MemAEShape shape);
  // `contributions`: what each client sent (possibly empty). Returns the
  // broadcast; `summary` says what happened (for the log).
  std::vector<double> round(const std::vector<std::vector<double>>& contributions, std::string& summary);

 private:
  LearnOptions opt_;
  learn::MemAEShape shape_;
  learn::MemAE global_;
  learn::ServerState state_;  // FedAvgM/FedAdam/personalised server optimiser
  long round_ = 0;
  std::vector<double> sum_, sumsq_;
  double count_ = 0;
  double threshold_ = 0;
  std::vector<double> recent_;  // the last rounds' estimates after warm-up (lowering rule)
};

// Concatenates contributions on the wire: each is prefixed by its length.
void append_record(std::vector<double>& acc, const std::vector<double>& rec);
std::vector<std::vector<double>> split_records(const std::vector<double>& acc);

}  // namespace scout::scoutd
