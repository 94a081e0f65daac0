// Federated telemetry outlier detection as a round participant (see
// parts.hpp): every node cuts its telemetry into windows and trains its
// MemAE on them (beside/fed_learner); the deciding observer calls a learn
// round every learn period (its own round: the contributions go up, the
// new global model comes down), and the nodes' anomaly flags ride on a
// gather as advisory telemetry_anomaly verdicts.
#include <algorithm>

#include <fmt/format.h>

#include "common/gpu_health.hpp"
#include "scoutd/beside/fed_learner.hpp"
#include "scoutd/observe/telemetry.hpp"
#include "scoutd/round/parts.hpp"

namespace scout::scoutd {

namespace {

LearnOptions learn_options(const ScoutdConfig& cfg) {
  LearnOptions o;
  o.on = cfg.learn;
  o.window_s = cfg.learn_window_s;
  o.round_s = cfg.learn_round_s;
  o.warmup_rounds = cfg.learn_warmup;
  o.consecutive = cfg.learn_consecutive;
  o.quantile = cfg.learn_quantile;
  o.margin = cfg.learn_margin;
  o.seed = static_cast<std::uint64_t>(cfg.learn_seed);
  learn::parse_aggregation(cfg.learn_aggregation, o.aggregation);  // validated when parsed
  return o;
}

const learn::MemAEShape kShape{kTelemetryFeatures, 32, 8, 20};

class Learner final : public Participant {
 public:
  Learner(RoundContext& ctx, Incidents& desk)
      : ctx_(ctx), desk_(desk), client_(std::make_unique<FedClient>(learn_options(ctx.cfg), kShape)) {
    gpus_ = std::make_unique<common::GpuHealth>();
    if (!gpus_->available()) gpus_.reset();  // no NVML: the GPU features stay 0
  }

  void add_trigger(wire::Trigger& t) override {
    t.learn_pending = static_cast<std::uint32_t>(client_->pending_flags());
    const auto s = client_->last_scored();
    t.learn_scored = s.scored;
    t.learn_above = s.above;
  }

  bool decide_trigger(const TriggerIn& in, wire::Down& down) override {
    if (ctx_.tun.learn && ctx_.now() - last_learn_s_ >= ctx_.cfg.learn_round_s) {  // learn=off: paused
      last_learn_s_ = ctx_.now();
      down.learn = true;
    }
    above_ = in.t.learn_above;
    scored_ = in.t.learn_scored;
    const bool agreed = telemetry_consensus(above_, scored_);
    if (in.t.learn_pending > 0 && !agreed && !held_)
      ctx_.log(fmt::format("telemetry: {} of {} ranks above the threshold at once: a change of the job or the "
                           "host, no rank named while it lasts", above_, scored_));
    held_ = in.t.learn_pending > 0 && !agreed;
    return in.t.learn_pending > 0 && agreed;
  }

  // The flags ride up in the gather and stay this node's until the gather
  // comes back complete and not held: a gather that lost this node's part,
  // or one asked for by another participant while the ranks above were no
  // minority, puts them back (a rank still above is reported once the
  // change has passed; one back to normal is withdrawn).
  void add_gather(wire::Gather& g) override {
    sent_ = client_->take_flags();
    for (auto& f : sent_) g.telemetry.push_back(f);
  }

  void decide_gather(const wire::Gather& g, wire::Down& down) override {
    // A gather asked for by another participant carries the flags too: a
    // job-wide change names no rank there either.
    if (!g.telemetry.empty() && !telemetry_consensus(above_, scored_)) {
      if (!held_)
        ctx_.log(fmt::format("telemetry: {} flag(s) held: {} of {} ranks above the threshold at once",
                             g.telemetry.size(), above_, scored_));
      held_ = true;
      down.telemetry_held = true;
      return;
    }
    for (auto& f : g.telemetry) desk_.draft(telemetry_anomaly_draft(f, above_, scored_));
  }

  void gather_done(bool complete, const wire::Down& down) override {
    if (!complete || down.telemetry_held) client_->put_back(std::move(sent_));
    sent_.clear();
  }

  void end_period(bool complete, const wire::Down& down) override {
    if (ctx_.tun.learn && ctx_.now() - last_window_s_ >= ctx_.cfg.learn_window_s) {
      last_window_s_ = ctx_.now();
      const auto ev = ctx_.ranks->evidence();
      std::vector<common::GpuTelemetry> gpus;
      if (gpus_ && std::any_of(ev.begin(), ev.end(), [](auto& e) { return e.gpu.present; }))
        gpus = gpus_->telemetry();
      client_->add_windows(sampler_.sample(ev, ctx_.now(), gpus));
    }
    if (complete && down.learn) learn_round();
  }

  void status(nlohmann::json& st) const override { st["learn"] = client_->status(); }

 private:
  void learn_round() {
    std::vector<double> rec;
    append_record(rec, client_->contribution());
    auto lr = ctx_.round(wire::encode_doubles(wire::Kind::kLearnUp, rec), wire::concat_doubles,
                         [this](const wire::Bytes& acc, const std::vector<int>&) { return decide(acc); });
    client_->apply_global(wire::decode_doubles(lr.down, wire::Kind::kLearnDown).value_or(std::vector<double>{}));
    if (client_->round() != logged_round_) {
      logged_round_ = client_->round();
      ctx_.log(fmt::format("learn round {} applied: model {:016x}", logged_round_, client_->model_signature()));
    }
  }

  wire::Bytes decide(const wire::Bytes& acc) {
    if (!server_) server_.emplace(learn_options(ctx_.cfg), kShape);
    const auto all = wire::decode_doubles(acc, wire::Kind::kLearnUp).value_or(std::vector<double>{});
    std::string summary;
    auto down = server_->round(split_records(all), summary);
    ctx_.log(fmt::format("learn round: {}; {} bytes in, {} bytes out", summary, acc.size(),
                         down.size() * sizeof(double)));
    return wire::encode_doubles(wire::Kind::kLearnDown, down);
  }

  RoundContext& ctx_;
  Incidents& desk_;
  std::unique_ptr<FedClient> client_;
  std::optional<FedServer> server_;          // deciding observer
  std::unique_ptr<common::GpuHealth> gpus_;      // NVML for the GPU features (null: none)
  TelemetrySampler sampler_;
  double last_window_s_ = 0, last_learn_s_ = 0;
  std::uint32_t above_ = 0, scored_ = 0;  // the job's latest scored windows (telemetry_consensus)
  bool held_ = false;
  std::vector<AnomalyFlag> sent_;  // taken for the gather in flight
  long logged_round_ = -1;
};

}  // namespace

std::unique_ptr<Participant> make_learner(RoundContext& ctx, Incidents& desk) {
  return std::make_unique<Learner>(ctx, desk);
}

}  // namespace scout::scoutd
