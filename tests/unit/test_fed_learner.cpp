// Federated learner: the wire records, a round trip through the server that
// gives every client the same model, scaler and threshold settling during
// warm-up then frozen, K consecutive windows before a flag, and malformed
// contributions left out; under every aggregation (--learn-aggregation),
// and a GPU feature naming a rank whose GPU went idle.
#include <doctest/doctest.h>

#include <chrono>
#include <random>
#include <thread>

#include "scoutd/beside/fed_learner.hpp"

using namespace scout::scoutd;

namespace {
std::vector<TelemetryWindow> windows(int rank, int n, std::mt19937_64& rng, double cpu = 0.1, double gpu_util = 0.9) {
  std::normal_distribution<double> noise(0, 0.02);
  std::vector<TelemetryWindow> out;
  for (int i = 0; i < n; ++i) {
    TelemetryWindow w;
    w.rank = rank;
    w.node = "n" + std::to_string(rank + 1);
    w.x = {3.0 + noise(rng), 0.9 + noise(rng), 0.1 + noise(rng), 3.5 + noise(rng), cpu + noise(rng), 4.0,
           5.0 + noise(rng), 1.0 + noise(rng), 0.1, 0.1, 0, 0, 0,
           gpu_util + noise(rng), 6.0 + noise(rng), 0.45 + noise(rng), 1.98, 0.3 + noise(rng)};
    out.push_back(w);
  }
  return out;
}
// Local training runs in a background thread: give it time to finish so the
// next round carries updates.
void let_clients_train() { std::this_thread::sleep_for(std::chrono::milliseconds(500)); }
}  // namespace

TEST_CASE("records concatenate and split back; a truncated tail is dropped") {
  std::vector<double> acc;
  append_record(acc, {1, 2, 3});
  append_record(acc, {});
  append_record(acc, {4});
  auto r = split_records(acc);
  REQUIRE(r.size() == 3);
  CHECK(r[0] == std::vector<double>{1, 2, 3});
  CHECK(r[1].empty());
  acc.push_back(10);  // claims 10 values, has none
  CHECK(split_records(acc).size() == 3);
}

namespace {
// Six rounds over three clients under `agg`; then anomalies.
void run_rounds(scout::learn::Aggregation agg) {
  CAPTURE(scout::learn::aggregation_name(agg));
  LearnOptions o;
  o.warmup_rounds = 3;
  o.consecutive = 2;
  o.local_epochs = 2;
  o.aggregation = agg;
  o.personalise_steps = 50;
  scout::learn::MemAEShape shape{kTelemetryFeatures, 8, 4, 6};
  FedServer server(o, shape);
  std::vector<std::unique_ptr<FedClient>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(std::make_unique<FedClient>(o, shape));
  std::mt19937_64 rng(3);
  std::vector<double> down;
  std::vector<std::string> thresholds;
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 3; ++i) clients[static_cast<std::size_t>(i)]->add_windows(windows(i, 40, rng));
    std::vector<std::vector<double>> contribs;
    for (auto& c : clients) contribs.push_back(c->contribution());
    contribs.push_back({42.0, 1.0});  // malformed: left out
    std::string summary;
    down = server.round(contribs, summary);
    CHECK(summary.find("3 of 4 clients") == 0);
    for (auto& c : clients) c->apply_global(down);
    let_clients_train();
    thresholds.push_back(std::to_string(down.size() > 1 ? down[1] : -1));
    const auto sig = clients[0]->model_signature();
    CHECK(sig != 0);
    for (auto& c : clients) CHECK(c->model_signature() == sig);
  }
  CHECK(clients[0]->round() == 6);
  CHECK(std::stod(thresholds.back()) > 0);
  CHECK(thresholds[4] == thresholds[5]);  // frozen after warm-up
  const auto st = clients[0]->status();
  CHECK(st["aggregation"] == scout::learn::aggregation_name(agg));
  CHECK(st["personal_memory"] == (agg == scout::learn::Aggregation::kPersonalised));
  // A rank whose CPU use jumps is flagged after K consecutive windows, once.
  for (int i = 0; i < 3; ++i) clients[static_cast<std::size_t>(i)]->add_windows(windows(i, 5, rng));
  CHECK(clients[1]->pending_flags() == 0);
  clients[1]->add_windows(windows(1, 1, rng, 3.0));
  CHECK(clients[1]->pending_flags() == 0);
  clients[1]->add_windows(windows(1, 3, rng, 3.0));
  auto flags = clients[1]->take_flags();
  REQUIRE(flags.size() == 1);
  CHECK(flags[0].rank == 1);
  CHECK(flags[0].consecutive == 2);
  CHECK(flags[0].top[0].first == "cpu_utilisation");
  CHECK(flags[0].score > flags[0].threshold);
  nlohmann::json j = flags[0];
  CHECK(j.get<AnomalyFlag>().top.size() == 3);
  CHECK(clients[0]->take_flags().empty());
  // A rank whose GPU goes idle (NVML utilisation 0.9 -> 0.05) is named by
  // the GPU feature.
  clients[2]->add_windows(windows(2, 3, rng, 0.1, 0.05));
  flags = clients[2]->take_flags();
  REQUIRE(flags.size() == 1);
  CHECK(flags[0].rank == 2);
  CHECK(flags[0].top[0].first == "gpu_utilisation");
  // A flag not yet taken is withdrawn when its rank comes back under the
  // threshold (it was held by a job-wide change): never reported late.
  clients[0]->add_windows(windows(0, 2, rng, 3.0));
  CHECK(clients[0]->pending_flags() == 1);
  CHECK(clients[0]->last_scored().above == 1);
  clients[0]->add_windows(windows(0, 1, rng));
  CHECK(clients[0]->pending_flags() == 0);
  CHECK(clients[0]->last_scored().scored == 1);
  CHECK(clients[0]->last_scored().above == 0);
  // A flag taken for a gather that did not record it (lost on the way, or
  // held while the ranks above were no minority) is pending again while
  // its rank stays above: the rank is still named once the change passes.
  clients[0]->add_windows(windows(0, 2, rng, 3.0));
  auto sent = clients[0]->take_flags();
  REQUIRE(sent.size() == 1);
  CHECK(clients[0]->pending_flags() == 0);
  clients[0]->add_windows(windows(0, 1, rng, 3.0));  // still above: no second flag of its own
  CHECK(clients[0]->pending_flags() == 0);
  clients[0]->put_back(sent);
  REQUIRE(clients[0]->pending_flags() == 1);
  auto again = clients[0]->take_flags();
  CHECK(again[0].rank == sent[0].rank);
  CHECK(again[0].score == sent[0].score);
  // ... and withdrawn if the rank came back under the threshold meanwhile.
  clients[0]->add_windows(windows(0, 1, rng));
  clients[0]->put_back(again);
  CHECK(clients[0]->pending_flags() == 0);
  // A rank flagged again since keeps its newer flag only.
  clients[0]->add_windows(windows(0, 2, rng, 3.0));
  REQUIRE(clients[0]->pending_flags() == 1);
  clients[0]->put_back(sent);
  CHECK(clients[0]->pending_flags() == 1);
}
}  // namespace

TEST_CASE("telemetry consensus: a rank is named against a strict majority scored normal in the same windows") {
  CHECK(telemetry_consensus(1, 4));
  CHECK(telemetry_consensus(1, 2));   // one rank above is compared with the learned normal
  CHECK(telemetry_consensus(1, 1));
  CHECK_FALSE(telemetry_consensus(2, 4));  // half the job at once: the job's or the host's change
  CHECK_FALSE(telemetry_consensus(2, 3));
  CHECK(telemetry_consensus(2, 5));
  CHECK_FALSE(telemetry_consensus(4, 4));
  CHECK(telemetry_consensus(7, 64));
  const AnomalyFlag f{3, "n4", 0.5, 0.15, 3, 12, {{"cpu_utilisation", 0.8}}};
  const auto d = telemetry_anomaly_draft(f, 1, 4);
  CHECK(d.evidence["ranks_above"] == 1);
  CHECK(d.evidence["ranks_scored"] == 4);
}

TEST_CASE("rounds give every client the same model; scaler and threshold freeze after warm-up") {
  using scout::learn::Aggregation;
  for (auto agg : {Aggregation::kPersonalised, Aggregation::kClustered, Aggregation::kMatched, Aggregation::kFedAdam,
                   Aggregation::kFedAvgM, Aggregation::kFedAvg})
    run_rounds(agg);
}

namespace {
// A contribution of `n` windows whose scores all fall in histogram bin `bin`
// (and `m` more in bin `bin_hi`), with a scaler part and no model update.
std::vector<double> scored_contribution(double n, int bin, double m = 0, int bin_hi = 0) {
  std::vector<double> c{1.0, n};
  for (int k = 0; k < kTelemetryFeatures; ++k) c.push_back(n);      // sums
  for (int k = 0; k < kTelemetryFeatures; ++k) c.push_back(2 * n);  // sums of squares
  std::vector<double> hist(kScoreBins, 0.0);
  hist[static_cast<std::size_t>(bin)] += n;
  hist[static_cast<std::size_t>(bin_hi)] += m;
  c.insert(c.end(), hist.begin(), hist.end());
  c.push_back(0.0);  // no update
  return c;
}
double threshold_after(FedServer& s, const std::vector<std::vector<double>>& contribs) {
  std::string summary;
  auto down = s.round(contribs, summary);
  REQUIRE(down.size() > 1);
  return down[1];
}
}  // namespace

TEST_CASE("a warm-up under a saturated host does not freeze a high threshold; a minority going wrong keeps it") {
  LearnOptions o;
  o.warmup_rounds = 3;
  scout::learn::MemAEShape shape{kTelemetryFeatures, 8, 4, 6};
  FedServer s(o, shape);
  // Warm-up while the host was saturated: every window scores high (bin 40).
  double t = 0;
  for (int r = 0; r <= 3; ++r) t = threshold_after(s, {scored_contribution(100, 40), scored_contribution(100, 40)});
  const double loaded = t;
  // The host quiets down (bin 20): not after one or two rounds, after three.
  CHECK(threshold_after(s, {scored_contribution(100, 20), scored_contribution(100, 20)}) == loaded);
  CHECK(threshold_after(s, {scored_contribution(100, 20), scored_contribution(100, 20)}) == loaded);
  t = threshold_after(s, {scored_contribution(100, 20), scored_contribution(100, 20)});
  CHECK(t < loaded / 100);
  CHECK(t > 0);
  // One client (a quarter of the windows) goes wrong: its windows set the
  // high quantile, so the threshold stays where it is; it never rises.
  for (int r = 0; r < 4; ++r)
    CHECK(threshold_after(s, {scored_contribution(100, 20, 100, 30), scored_contribution(200, 20)}) == t);
  // A job-wide rise does not raise it either.
  for (int r = 0; r < 4; ++r)
    CHECK(threshold_after(s, {scored_contribution(100, 45), scored_contribution(100, 45)}) == t);
}
