// Retuning a running job (scoutctl set JOB key=value) as a round participant
// (see parts.hpp). A request reaches one observer through its control socket
// (the job's user or root, checked there; the values checked there again);
// that observer says so in its trigger, the deciding observer asks for a
// gather, applies the requests it gathers in order to the settings in force
// (one new version per round), and sends the settings and what it applied
// down; every observer adopts them at that round boundary, logs the change
// and records it in its ledger (who, from which node, old and new value).
// A request stays queued at its observer until a down message names it, so
// a lost round does not lose it.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "scoutd/round/parts.hpp"

namespace scout::scoutd {

namespace {

using nlohmann::json;

class Tuning final : public Participant {
 public:
  explicit Tuning(RoundContext& ctx) : ctx_(ctx) { publish(json::array()); }

  void add_trigger(wire::Trigger& t) override {
    std::lock_guard lk(ctx_.tune_mu);
    t.tune_pending = ctx_.tune_pending.empty() ? 0u : 1u;
  }

  bool decide_trigger(const TriggerIn& in, wire::Down&) override { return in.t.tune_pending > 0; }

  void add_gather(wire::Gather& g) override {
    std::lock_guard lk(ctx_.tune_mu);
    for (auto& r : ctx_.tune_pending) {
      json ch = json::array();
      for (auto& [k, v] : r.changes) ch.push_back({k, v});
      g.tune.push_back({{"id", r.id}, {"uid", r.uid}, {"user", r.user}, {"node", ctx_.observers[ctx_.me].node},
                        {"changes", ch}});
    }
  }

  // The deciding observer: every gathered request, checked key by key
  // (a peer's message is checked like a client's), applied in order.
  void decide_gather(const wire::Gather& g, wire::Down& down) override {
    if (g.tune.empty()) return;
    common::Tunables next = ctx_.tun;
    json applied = json::array(), refused = json::array();
    for (auto& r : g.tune) {
      const std::string id = r.value("id", json()).is_string() ? r["id"].get<std::string>().substr(0, 128) : "";
      if (id.empty()) continue;
      common::Tunables trial = next;
      std::string why;
      json changes = json::array();
      const json& ch = r.value("changes", json());
      bool ok = ch.is_array() && !ch.empty() && ch.size() <= common::kTuneKeys.size();
      if (!ok) why = "expected 1 to 6 changes";
      for (std::size_t i = 0; ok && i < ch.size(); ++i) {
        const json& c = ch[i];
        if (!c.is_array() || c.size() != 2 || !c[0].is_string() || !c[1].is_string()) {
          ok = false;
          why = "expected [key, value] pairs";
          break;
        }
        const std::string key = c[0].get<std::string>(), value = c[1].get<std::string>();
        const std::string old = common::tunable_text(trial, key);
        ok = common::set_tunable(trial, key, value, &why);
        if (ok && key == "learn" && trial.learn && !ctx_.cfg.learn) {
          ok = false;
          why = "learn=on: the learner was not started with this job (learn=off at its start)";
        }
        if (ok) changes.push_back({{"key", key}, {"old", old}, {"new", common::tunable_text(trial, key)}});
      }
      const json who = {{"id", id},
                        {"uid", r.value("uid", json()).is_number_integer() ? r["uid"] : json(-1)},
                        {"user", r.value("user", json()).is_string() ? r["user"].get<std::string>().substr(0, 64) : ""},
                        {"node", r.value("node", json()).is_string() ? r["node"].get<std::string>().substr(0, 64) : ""}};
      if (!ok) {
        json x = who;
        x["why"] = why.substr(0, 256);
        refused.push_back(std::move(x));
        continue;
      }
      next = trial;
      json x = who;
      x["changes"] = std::move(changes);
      applied.push_back(std::move(x));
    }
    if (!applied.empty()) ++next.version;
    down.tune = json{{"settings", common::tunables_json(next)}, {"applied", applied}, {"refused", refused}};
  }

  // Every observer: the settings in force from now on.
  void apply_down(const wire::Down& down) override {
    if (!down.tune) return;
    const json& t = *down.tune;
    common::Tunables next;
    std::string why;
    if (!common::tunables_from_json(t.value("settings", json()), next, &why)) {
      ctx_.warn("settings from the deciding observer refused: " + why);
      return;
    }
    std::set<std::string> done;
    for (const char* list : {"applied", "refused"})
      for (auto& r : t.value(list, json::array()))
        if (r.is_object() && r.value("id", json()).is_string()) done.insert(r["id"].get<std::string>());
    for (auto& r : t.value("refused", json::array()))
      if (r.is_object())
        ctx_.log(fmt::format("settings request {} by {} refused: {}", r.value("id", std::string()),
                             r.value("user", std::string()), r.value("why", std::string())));
    if (next.version > ctx_.tun.version) {
      ctx_.tun = next;
      for (auto& r : t.value("applied", json::array())) {
        if (!r.is_object()) continue;
        std::string what;
        for (auto& c : r.value("changes", json::array()))
          if (c.is_object())
            what += fmt::format("{}{} {} -> {}", what.empty() ? "" : ", ", c.value("key", std::string()),
                                c.value("old", std::string()), c.value("new", std::string()));
        ctx_.log(fmt::format("settings version {} in force: {} (set by {} uid {} through {})", next.version, what,
                             r.value("user", std::string()), r.value("uid", json(-1)).dump(),
                             r.value("node", std::string())));
        ctx_.record_tune(r, next.version);
      }
      last_applied_ = t.value("applied", json::array());
    }
    {
      std::lock_guard lk(ctx_.tune_mu);
      auto& p = ctx_.tune_pending;
      p.erase(std::remove_if(p.begin(), p.end(), [&](auto& r) { return done.count(r.id) > 0; }), p.end());
    }
    publish(t.value("refused", json::array()));
  }

  void status(json& st) const override {
    std::lock_guard lk(ctx_.tune_mu);
    st["settings"] = ctx_.tune_status;
  }

 private:
  void publish(const json& refused) {
    json s = common::tunables_json(ctx_.tun);
    s["last_applied"] = last_applied_;
    if (!refused.empty()) s["last_refused"] = refused;
    std::lock_guard lk(ctx_.tune_mu);
    if (refused.empty() && ctx_.tune_status.contains("last_refused")) s["last_refused"] = ctx_.tune_status["last_refused"];
    s["pending"] = ctx_.tune_pending.size();
    ctx_.tune_status = std::move(s);
  }

  RoundContext& ctx_;
  json last_applied_ = json::array();
};

}  // namespace

std::unique_ptr<Participant> make_tuning(RoundContext& ctx) { return std::make_unique<Tuning>(ctx); }

}  // namespace scout::scoutd
