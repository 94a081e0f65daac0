// Checkpoint certification as a round participant (see parts.hpp): the
// deciding observer watches the checkpoint directory (observer 0 from the
// start, a successor from when it takes over: its first scan finds what was
// written meanwhile; paths already in the ledger are not added twice) and
// certifies a candidate once a clean replay cycle covered it, or refuses it
// after an SDC verdict.

#include <fmt/format.h>

#include "scoutd/beside/checkpoints.hpp"
#include "scoutd/round/parts.hpp"
#include "sql/ledger.hpp"

namespace scout::scoutd {

namespace {

class Checkpoints final : public Participant {
 public:
  Checkpoints(RoundContext& ctx, sql::Ledger& ledger) : ctx_(ctx), ledger_(ledger) {
    if (ctx.me == 0) start_watcher();
  }

  void after_commit() override { certify(); }

 private:
  void start_watcher() {
    if (tried_) return;
    tried_ = true;
    try {
      watcher_ = std::make_unique<CheckpointWatcher>(ctx_.cfg.ckpt_dir, ctx_.cfg.ckpt_settle_s, ctx_.cfg.ckpt_marker);
      ctx_.log(fmt::format("watching checkpoints in {}", ctx_.cfg.ckpt_dir));
    } catch (const std::exception& e) {
      ctx_.warn(fmt::format("{}; checkpoints are not certified", e.what()));
    }
  }

  void certify() {
    const auto& job = ctx_.cfg.job_id;
    start_watcher();  // a no-op unless this observer just took over
    try {
      if (watcher_)
        for (auto& c : watcher_->poll(sql::now_unix_ms())) {
          sql::CheckpointRow row;
          row.job_id = job;
          row.path = c.path;
          row.written_ms = c.written_ms;
          row.state = "candidate";
          row.reason = "complete; waiting for a clean replay cycle after it";
          if (ledger_.add_checkpoint(row)) ctx_.log(fmt::format("checkpoint {}: candidate", c.path));
        }
      std::vector<sql::CheckpointRow> candidates;
      for (auto& c : ledger_.checkpoints(job))
        if (c.state == "candidate") candidates.push_back(c);
      if (candidates.empty()) return;
      auto cycles = ledger_.replay_cycles(job);
      std::vector<SdcEvent> sdc;
      for (auto& v : ledger_.verdicts(job)) {
        if (v.kind != "sdc" || (v.status != "attributed" && v.status != "inconclusive")) continue;
        nlohmann::json ev = nlohmann::json::parse(v.evidence, nullptr, false);
        std::string what = v.status + " " + (ev.is_object() ? ev.value("source", "") : "") + " " + v.hosts + " " +
                           v.ranks;
        sdc.push_back({v.id, iso_to_unix_ms(v.detected_at), what});
      }
      for (auto& c : candidates)
        if (auto d = scoutd::certify(c, cycles, sdc)) {
          ledger_.set_checkpoint_state(c.id, d->first, d->second);
          ctx_.log(fmt::format("checkpoint {}: {}: {}", c.path, d->first, d->second));
        }
    } catch (const std::exception& e) {
      ctx_.warn(fmt::format("checkpoints: {}", e.what()));
    }
  }

  RoundContext& ctx_;
  sql::Ledger& ledger_;
  std::unique_ptr<CheckpointWatcher> watcher_;
  bool tried_ = false;  // start_watcher() ran
};

}  // namespace

std::unique_ptr<Participant> make_checkpoints(RoundContext& ctx, sql::Ledger& ledger) {
  return std::make_unique<Checkpoints>(ctx, ledger);
}

}  // namespace scout::scoutd
