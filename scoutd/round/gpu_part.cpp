// GPU health as a round participant (see parts.hpp): once ranks are
// attached (their GPUs known), each observer polls NVML for the GPUs of its
// ranks every interval; pending findings count as direct evidence in the
// trigger and ride on the next gather, where the deciding observer turns
// each into a verdict naming the ranks on that GPU.
#include <set>

#include <fmt/format.h>

#include "common/gpu_health.hpp"
#include "scoutd/beside/gpu_health_watch.hpp"
#include "scoutd/round/parts.hpp"

namespace scout::scoutd {

namespace {

class GpuHealthPart final : public Participant {
 public:
  GpuHealthPart(RoundContext& ctx, Incidents& desk, std::unique_ptr<GpuHealthWatch> watch)
      : ctx_(ctx), desk_(desk), watch_(std::move(watch)) {}

  void add_trigger(wire::Trigger& t) override {
    if (ctx_.summary.attached > 0 && ctx_.now() - last_poll_s_ >= ctx_.cfg.gpu_health_interval_s) {
      last_poll_s_ = ctx_.now();
      std::set<std::string> buses;
      for (auto& e : ctx_.ranks->evidence())
        if (e.gpu.present && !e.gpu.bus_id.empty()) buses.insert(common::normalise_bus_id(e.gpu.bus_id));
      if (std::size_t n = watch_->poll(buses); n > 0) ctx_.log(fmt::format("GPU health: {} new finding(s)", n));
    }
    t.suspects += static_cast<std::uint32_t>(watch_->pending());
  }

  void add_gather(wire::Gather& g) override {
    sent_ = watch_->take(ctx_.me);
    for (auto& f : sent_)
      if (f.is_object() && f.contains("gpu_health")) g.gpu_health.push_back(f["gpu_health"]);
  }

  void decide_gather(const wire::Gather& g, wire::Down&) override {
    for (auto& f : g.gpu_health) {
      try {
        desk_.draft(gpu_health_draft(f, g.ranks));
      } catch (const std::exception&) {
        ctx_.log("gather: a malformed GPU health finding dropped");
      }
    }
  }

  void gather_done(bool complete, const wire::Down&) override {
    if (!complete) watch_->put_back(std::move(sent_));  // told again next gather
    sent_.clear();
  }

 private:
  RoundContext& ctx_;
  Incidents& desk_;
  std::unique_ptr<GpuHealthWatch> watch_;
  std::vector<nlohmann::json> sent_;
  double last_poll_s_ = 0;
};

}  // namespace

std::unique_ptr<Participant> make_gpu_health(RoundContext& ctx, Incidents& desk) {
  auto watch = std::make_unique<GpuHealthWatch>(ctx.ranks->node());
  if (!watch->available()) {
    ctx.log(fmt::format("GPU health not watched: {}", watch->why_unavailable()));
    return nullptr;
  }
  return std::make_unique<GpuHealthPart>(ctx, desk, std::move(watch));
}

}  // namespace scout::scoutd
