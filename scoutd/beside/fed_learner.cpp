// Federated telemetry outlier detection (see fed_learner.hpp).
#include "scoutd/beside/fed_learner.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "learn/aggregate.hpp"
#include "libc3/signature.hpp"

namespace scout::scoutd {

using nlohmann::json;
using learn::Mat;
using learn::Vec;

namespace {
constexpr int D = kTelemetryFeatures;
constexpr std::size_t kHistWindows = 400;  // windows scored for the histogram
constexpr double kZClamp = 8;              // standardised features are clamped: heavy tails
inline double zs(double x, double m, double sd) { return std::clamp((x - m) / sd, -kZClamp, kZClamp); }

int score_bin(double s) {
  const double l = std::log10(std::max(s, 1e-12));
  return std::clamp(static_cast<int>(std::floor((l + 4.0) / 8.0 * kScoreBins)), 0, kScoreBins - 1);
}
double bin_upper(int b) { return std::pow(10.0, -4.0 + 8.0 * (b + 1) / kScoreBins); }
}  // namespace

void append_record(std::vector<double>& acc, const std::vector<double>& rec) {
  acc.push_back(static_cast<double>(rec.size()));
  acc.insert(acc.end(), rec.begin(), rec.end());
}


std::vector<std::vector<double>> split_records(const std::vector<double>& acc) {
  std::vector<std::vector<double>> out;
  std::size_t i = 0;
  while (i < acc.size()) {
    const double n = acc[i++];
    if (!(n >= 0) || i + static_cast<std::size_t>(n) > acc.size()) break;  // malformed: stop
    out.emplace_back(acc.begin() + static_cast<long>(i), acc.begin() + static_cast<long>(i + static_cast<std::size_t>(n)));
    i += static_cast<std::size_t>(n);
  }
  return out;
}

// ---------------------------------------------------------------- client --

FedClient::FedClient(LearnOptions o, learn::MemAEShape shape)
    : opt_(o), shape_(shape), new_sum_(D, 0.0), new_sumsq_(D, 0.0) {
  thread_ = std::thread([this] { train_loop(); });
}

FedClient::~FedClient() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FedClient::add_windows(const std::vector<TelemetryWindow>& ws) {
  std::lock_guard lk(mu_);
  std::map<int, bool> latest_above;  // rank -> its latest window of this batch was above
  for (auto& w : ws) {
    if (w.x.size() != static_cast<std::size_t>(D)) continue;
    windows_.push_back(w.x);
    for (int k = 0; k < D; ++k) {
      new_sum_[static_cast<std::size_t>(k)] += w.x[static_cast<std::size_t>(k)];
      new_sumsq_[static_cast<std::size_t>(k)] += w.x[static_cast<std::size_t>(k)] * w.x[static_cast<std::size_t>(k)];
    }
    new_count_ += 1;
    if (!have_global_ || round_ < opt_.warmup_rounds || threshold_ <= 0) continue;
    Mat x(D, 1);
    for (int k = 0; k < D; ++k) x(k, 0) = zs(w.x[static_cast<std::size_t>(k)], mean_(k), sd_(k));
    const Mat xr = scorer().reconstruct(x);
    const Vec err = (xr - x).col(0).cwiseAbs2();
    const double s = err.sum() / D;
    int& run = above_[w.rank];
    latest_above[w.rank] = s > threshold_;
    if (s > threshold_) {
      ++run;
    } else {
      run = 0;
      flagged_[w.rank] = false;
      // Back to normal before it was reported (a job- or host-wide change
      // held it): the flag is withdrawn, never reported late.
      std::erase_if(flags_, [&](const AnomalyFlag& f) { return f.rank == w.rank; });
    }
    if (run >= opt_.consecutive && !flagged_[w.rank]) {
      flagged_[w.rank] = true;
      AnomalyFlag f{w.rank, w.node, s, threshold_, run, round_, {}};
      std::vector<int> idx(D);
      for (int k = 0; k < D; ++k) idx[static_cast<std::size_t>(k)] = k;
      std::sort(idx.begin(), idx.end(), [&](int a, int b) { return err(a) > err(b); });
      for (int k = 0; k < 3; ++k)
        f.top.emplace_back(kTelemetryFeatureNames[idx[static_cast<std::size_t>(k)]],
                           err(idx[static_cast<std::size_t>(k)]) / std::max(1e-12, err.sum()));
      flags_.push_back(std::move(f));
    }
  }
  if (!latest_above.empty()) {
    scored_.scored = static_cast<std::uint32_t>(latest_above.size());
    scored_.above = static_cast<std::uint32_t>(std::count_if(latest_above.begin(), latest_above.end(),
                                                             [](auto& r) { return r.second; }));
  }
  if (windows_.size() > opt_.max_windows)
    windows_.erase(windows_.begin(), windows_.end() - static_cast<long>(opt_.max_windows));
}

std::vector<double> FedClient::contribution() {
  std::lock_guard lk(mu_);
  std::vector<double> c;
  c.push_back(1.0);  // layout version
  c.push_back(new_count_);
  c.insert(c.end(), new_sum_.begin(), new_sum_.end());
  c.insert(c.end(), new_sumsq_.begin(), new_sumsq_.end());
  std::fill(new_sum_.begin(), new_sum_.end(), 0.0);
  std::fill(new_sumsq_.begin(), new_sumsq_.end(), 0.0);
  new_count_ = 0;
  std::vector<double> hist(kScoreBins, 0.0);
  if (have_global_ && !windows_.empty()) {
    const std::size_t n = std::min(windows_.size(), kHistWindows);
    Mat x(D, static_cast<Eigen::Index>(n));
    for (std::size_t i = 0; i < n; ++i)
      for (int k = 0; k < D; ++k)
        x(k, static_cast<Eigen::Index>(i)) = zs(windows_[windows_.size() - n + i][static_cast<std::size_t>(k)], mean_(k), sd_(k));
    const Vec s = scorer().score(x);
    for (Eigen::Index i = 0; i < s.size(); ++i) hist[static_cast<std::size_t>(score_bin(s(i)))] += 1;
  }
  c.insert(c.end(), hist.begin(), hist.end());
  if (update_) {
    c.push_back(1.0);
    c.push_back(update_samples_);
    c.insert(c.end(), update_usage_.data(), update_usage_.data() + update_usage_.size());
    auto p = learn::to_wire(*update_);
    c.insert(c.end(), p.begin(), p.end());
    update_.reset();
  } else {
    c.push_back(0.0);
  }
  return c;
}

void FedClient::apply_global(const std::vector<double>& down) {
  std::lock_guard lk(mu_);
  learn::MemAE proto(shape_, {}, opt_.seed);
  const std::size_t need = 2 + 2 * static_cast<std::size_t>(D) + proto.param_count();
  if (down.size() != need) return;  // malformed or no model yet
  round_ = static_cast<long>(down[0]);
  threshold_ = down[1];
  const Vec mean = Eigen::Map<const Vec>(down.data() + 2, D), sd = Eigen::Map<const Vec>(down.data() + 2 + D, D);
  // A personal memory fitted under another scaler no longer fits the data.
  if (mean_.size() != D || mean != mean_ || sd != sd_) personal_.reset();
  mean_ = Eigen::Map<const Vec>(down.data() + 2, D);
  sd_ = Eigen::Map<const Vec>(down.data() + 2 + D, D);
  global_ = proto;
  global_.set_params(Eigen::Map<const Vec>(down.data() + 2 + 2 * D, static_cast<Eigen::Index>(proto.param_count())));
  have_global_ = true;
  update_.reset();  // an update for an older global is stale
  train_requested_ = true;
  cv_.notify_all();
}

void FedClient::train_loop() {
  for (;;) {
    learn::MemAE model;
    Mat data;
    long round = 0;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [this] { return stop_ || train_requested_; });
      if (stop_) return;
      train_requested_ = false;
      if (windows_.empty()) continue;
      model = global_;
      round = round_;
      data.resize(static_cast<Eigen::Index>(windows_.size()), D);
      for (std::size_t i = 0; i < windows_.size(); ++i)
        for (int k = 0; k < D; ++k)
          data(static_cast<Eigen::Index>(i), k) = zs(windows_[i][static_cast<std::size_t>(k)], mean_(k), sd_(k));
    }
    const learn::MemAE global = model;
    learn::Adam adam;
    learn::TrainOptions to;
    to.epochs = opt_.local_epochs;
    to.batch = 32;
    to.lr = 3e-3;
    to.seed = opt_.seed + static_cast<std::uint64_t>(round) * 7919;
    learn::train(model, data, to, adam);
    Vec usage = model.usage(data.transpose());
    std::optional<learn::MemAE> personal;
    if (opt_.aggregation == learn::Aggregation::kPersonalised) {
      learn::PersonaliseOptions po;
      po.steps = opt_.personalise_steps;
      po.batch = 32;
      po.seed = to.seed + 1;
      personal = learn::personalise(global, data, po);
    }
    std::lock_guard lk(mu_);
    if (round != round_) continue;  // a newer global arrived meanwhile
    if (personal) personal_ = std::move(personal);
    update_ = std::move(model);
    update_samples_ = static_cast<double>(data.rows());
    update_usage_ = usage;
  }
}

std::vector<AnomalyFlag> FedClient::take_flags() {
  std::lock_guard lk(mu_);
  return std::exchange(flags_, {});
}

FedClient::Scored FedClient::last_scored() const {
  std::lock_guard lk(mu_);
  return scored_;
}

void FedClient::put_back(std::vector<AnomalyFlag> flags) {
  std::lock_guard lk(mu_);
  std::vector<AnomalyFlag> back;
  for (auto& f : flags) {
    const auto still = flagged_.find(f.rank);
    if (still == flagged_.end() || !still->second) continue;  // back to normal since: withdrawn
    if (std::any_of(flags_.begin(), flags_.end(), [&](const AnomalyFlag& g) { return g.rank == f.rank; })) continue;
    back.push_back(std::move(f));
  }
  flags_.insert(flags_.begin(), std::make_move_iterator(back.begin()), std::make_move_iterator(back.end()));
}

std::size_t FedClient::pending_flags() const {
  std::lock_guard lk(mu_);
  return flags_.size();
}

std::uint64_t FedClient::model_signature() const {
  std::lock_guard lk(mu_);
  if (!have_global_) return 0;
  auto p = learn::to_wire(global_);
  return c3::signature(p.data(), p.size() * sizeof(double));
}

long FedClient::round() const {
  std::lock_guard lk(mu_);
  return round_;
}

json FedClient::status() const {
  const std::uint64_t sig = model_signature();
  std::lock_guard lk(mu_);
  return {{"round", round_}, {"model", fmt::format("{:016x}", sig)}, {"threshold", threshold_},
          {"aggregation", learn::aggregation_name(opt_.aggregation)}, {"personal_memory", personal_.has_value()},
          {"windows", windows_.size()}, {"scoring", have_global_ && round_ >= opt_.warmup_rounds && threshold_ > 0}};
}

// ---------------------------------------------------------------- server --

FedServer::FedServer(LearnOptions o, learn::MemAEShape shape)
    : opt_(o), shape_(shape), global_(shape, {}, o.seed), sum_(D, 0.0), sumsq_(D, 0.0) {}

std::vector<double> FedServer::round(const std::vector<std::vector<double>>& contributions, std::string& summary) {
  const std::size_t P = global_.param_count(), N = static_cast<std::size_t>(shape_.slots);
  std::vector<learn::MemAE> models;
  std::vector<double> samples;
  std::vector<Vec> usages;
  std::vector<double> hist(kScoreBins, 0.0);
  int updates = 0, clients = 0;
  for (auto& c : contributions) {
    const std::size_t base = 2 + 2 * static_cast<std::size_t>(D);
    if (c.size() < base + kScoreBins + 1 || c[0] != 1.0) continue;  // malformed: left out
    ++clients;
    if (round_ < opt_.warmup_rounds) {  // the scaler settles during warm-up
      count_ += c[1];
      for (int k = 0; k < D; ++k) {
        sum_[static_cast<std::size_t>(k)] += c[2 + static_cast<std::size_t>(k)];
        sumsq_[static_cast<std::size_t>(k)] += c[2 + D + static_cast<std::size_t>(k)];
      }
    }
    for (int b = 0; b < kScoreBins; ++b) hist[static_cast<std::size_t>(b)] += c[base + static_cast<std::size_t>(b)];
    const std::size_t u = base + kScoreBins;
    if (c[u] == 1.0 && c.size() == u + 2 + N + P) {
      learn::MemAE m = global_;
      m.set_params(Eigen::Map<const Vec>(c.data() + u + 2 + N, static_cast<Eigen::Index>(P)));
      models.push_back(std::move(m));
      samples.push_back(c[u + 1]);
      usages.push_back(Eigen::Map<const Vec>(c.data() + u + 2, static_cast<Eigen::Index>(N)));
      ++updates;
    }
  }
  if (!models.empty()) {
    std::vector<learn::ClientModel> cms;
    for (std::size_t i = 0; i < models.size(); ++i) cms.push_back({&models[i], samples[i], usages[i]});
    auto a = learn::aggregate(opt_.aggregation, global_, cms, state_, opt_.seed + static_cast<std::uint64_t>(round_));
    global_ = std::move(a.model);
    state_ = std::move(a.state);
  }
  double total = 0;
  for (double h : hist) total += h;
  // The threshold settles during warm-up; after it, it may only come down:
  // a warm-up taken while the host was saturated (every rank's windows
  // noisy) would otherwise freeze a threshold many times too high. It comes
  // down to the largest estimate of the last kLowerRounds rounds when that
  // is lower, so one quiet round does not lower it, and a rank that went
  // wrong keeps it where it is: the estimate is a high quantile of every
  // rank's recent windows, which a minority of rising ranks raise, never
  // lower. It never rises after warm-up (a job-wide change is the
  // consensus guard's, not the threshold's). Only rounds with every node's
  // windows count: a round without the loaded nodes would pull it under
  // their normal.
  constexpr std::size_t kLowerRounds = 3;
  bool lowered = false;
  if (total >= 50) {
    double estimate = 0;
    double cum = 0;
    for (int b = 0; b < kScoreBins; ++b) {
      cum += hist[static_cast<std::size_t>(b)];
      if (cum >= opt_.quantile * total) {
        estimate = bin_upper(b) * opt_.margin;
        break;
      }
    }
    if (round_ <= opt_.warmup_rounds) {
      threshold_ = estimate;
    } else if (estimate > 0 && clients == static_cast<int>(contributions.size())) {  // every node's windows
      recent_.push_back(estimate);
      if (recent_.size() > kLowerRounds) recent_.erase(recent_.begin());
      const double cap = *std::max_element(recent_.begin(), recent_.end());
      if (recent_.size() == kLowerRounds && cap < threshold_) threshold_ = cap, lowered = true;
    }
  }
  ++round_;
  summary = fmt::format("{} of {} clients, {} updates, {:.0f} windows scored, threshold {:.4g}{}", clients,
                        contributions.size(), updates, total, threshold_, lowered ? " (lowered)" : "");
  if (count_ < 2) return {};  // no scaler yet: no model to broadcast
  std::vector<double> down;
  down.push_back(static_cast<double>(round_));
  down.push_back(threshold_);
  for (int k = 0; k < D; ++k) down.push_back(sum_[static_cast<std::size_t>(k)] / count_);
  for (int k = 0; k < D; ++k) {
    const double m = sum_[static_cast<std::size_t>(k)] / count_;
    const double var = sumsq_[static_cast<std::size_t>(k)] / count_ - m * m;
    down.push_back(std::sqrt(std::max(var, 0.0)) + 0.05);  // a floor: constant features stay finite
  }
  auto p = learn::to_wire(global_);
  down.insert(down.end(), p.begin(), p.end());
  return down;
}

}  // namespace scout::scoutd
