// scoutd's round engine on the simulated network (see engine_sim.hpp).
#include "sim/engine_sim.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "libc3/verdict_kind.hpp"
#include "scoutd/decide/verdict_sink.hpp"
#include "scoutd/round/parts.hpp"

namespace scout::sim {

using host = std::chrono::steady_clock;

scoutd::ScoutdConfig EngineSimConfig::default_scoutd() {
  scoutd::ScoutdConfig c;
  c.job_id = "1";
  c.learn = false;
  c.replay = false;
  c.stacks = false;  // no processes to trace: verdicts do not wait for stacks
  c.gpu_health_interval_s = 0;
  return c;
}

namespace {

// Verdicts into memory: the first commit of each stable key is the verdict.
class MemorySink final : public scoutd::VerdictSink {
 public:
  MemorySink(int member, std::function<void(int, const scoutd::VerdictToCommit&)> on_commit,
             std::function<void(const std::string&)> on_resolution)
      : member_(member), on_commit_(std::move(on_commit)), on_resolution_(std::move(on_resolution)) {}
  std::int64_t commit_verdict(const scoutd::VerdictToCommit& v) override {
    on_commit_(member_, v);
    return ++ids_;
  }
  void commit_resolution(const std::string& vkey, const std::string&) override { on_resolution_(vkey); }

 private:
  int member_;
  std::function<void(int, const scoutd::VerdictToCommit&)> on_commit_;
  std::function<void(const std::string&)> on_resolution_;
  std::int64_t ids_ = 0;
};

}  // namespace

struct EngineSim::Member {
  explicit Member(const scoutd::ScoutdConfig& cfg) : ctx(cfg) {}
  scoutd::RoundContext ctx;
  std::unique_ptr<SimRanks> ranks;
  std::unique_ptr<MemorySink> sink;
  std::unique_ptr<c3::TreeRound> tree;
  std::unique_ptr<scoutd::RoundEngine> engine;
  bool crashed = false, stopped = false, gather = false;
  Clock::time_point frozen_until{};
  std::uint64_t wake_stamp = 0, periods = 0;
  std::uint64_t bytes_in = 0;  // this round's, from children
  double cpu_s = 0;            // this round's combine and decide
  double round_began = 0;      // virtual seconds
};

namespace {

// When the workload's first fault begins, or -1.
double first_fault(const WorkloadOptions& w) {
  double t = -1;
  auto at = [&t](bool on, double s) {
    if (on && (t < 0 || s < t)) t = s;
  };
  at(w.stopped_rank >= 0, w.stop_at_s);
  at(w.crashed_rank >= 0, w.crash_at_s);
  at(w.slow_rank >= 0 && w.slow_factor != 1.0, w.slow_at_s);
  return t;
}

}  // namespace

EngineSim::EngineSim(EngineSimConfig cfg)
    : cfg_(std::move(cfg)),
      net_(cfg_.members, clock_, cfg_.link, cfg_.seed),
      work_(cfg_.work, cfg_.members),
      checker_(cfg_.members, first_fault(cfg_.work)) {
  checker_.reachable = [this](int a, int b) {
    const auto& mb = *members_[static_cast<std::size_t>(b)];
    const auto& view = members_[static_cast<std::size_t>(a)]->tree->alive();
    return !mb.crashed && !frozen(b) && net_.side_of(a) == net_.side_of(b) &&
           std::binary_search(view.begin(), view.end(), b);
  };
  cfg_.scoutd.ranks = work_.ranks();
  epoch_ = Clock::time_point{} + std::chrono::hours(1);
  clock_.set(epoch_);
  auto on_commit = [this](int m, const scoutd::VerdictToCommit& v) {
    const bool own = v.vkey.rfind(fmt::format("1.0.o{}.1.", m), 0) == 0;
    checker_.commit(now_s(), m, own, v.vkey, v.key, c3::to_string(v.kind), side_alive(m), side_changed_at_,
                    members_[static_cast<std::size_t>(m)]->round_began);
    if (by_vkey_.count(v.vkey)) return;  // a replica of a verdict already counted
    by_vkey_[v.vkey] = verdicts_.size();
    verdicts_.push_back({now_s(), m, c3::to_string(v.kind), c3::to_string(v.status), v.key, v.ranks});
  };
  for (int m = 0; m < cfg_.members; ++m) {
    auto mb = std::make_unique<Member>(cfg_.scoutd);
    auto& ctx = mb->ctx;
    ctx.me = m;
    ctx.size = cfg_.members;
    const int k = cfg_.work.ranks_per_member;
    for (int o = 0; o < cfg_.members; ++o)
      ctx.observers.push_back({"n" + std::to_string(o + 1), o * k, o * k + k - 1, 1000 + o});
    ctx.now = [this] { return now_s(); };
    ctx.now_iso = [this] { return fmt::format("T+{:.6f}", now_s()); };
    ctx.stopping = [] { return false; };
    ctx.log = [](const std::string&) {};
    ctx.warn = [](const std::string&) {};
    mb->ranks = std::make_unique<SimRanks>(work_, m, [this] { return now_s(); });
    ctx.ranks = mb->ranks.get();
    mb->tree = std::make_unique<c3::TreeRound>(net_.transport(m), clock_,
                                               c3::TreeRound::Options{cfg_.scoutd.round_timeout_s});
    ctx.tree = mb->tree.get();
    mb->sink = std::make_unique<MemorySink>(m, on_commit,
                                            [this](const std::string& vkey) { checker_.resolution(vkey); });
    mb->engine = std::make_unique<scoutd::RoundEngine>(
        ctx, std::make_unique<scoutd::Incidents>(ctx, *mb->sink, fmt::format("1.0.o{}.1", m), nullptr));
    auto& desk = mb->engine->desk();
    mb->engine->add(scoutd::make_progress(ctx, desk));
    mb->engine->add(scoutd::make_outputs(ctx, desk));
    mb->engine->add(scoutd::make_stragglers(ctx, desk));
    members_.push_back(std::move(mb));
  }
  net_.on_arrival = [this](int m) { step(m); };
  for (int m = 0; m < cfg_.members; ++m) net_.at(epoch_, [this, m] { start_period(m); });
}

EngineSim::~EngineSim() = default;

Clock::time_point EngineSim::at_s(double t) const {
  return epoch_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(t));
}

double EngineSim::now_s() const { return std::chrono::duration<double>(clock_.time() - epoch_).count(); }

bool EngineSim::frozen(int m) const { return clock_.time() < members_[static_cast<std::size_t>(m)]->frozen_until; }

std::uint64_t EngineSim::periods(int m) const { return members_[static_cast<std::size_t>(m)]->periods; }

void EngineSim::crash(int m, double t) {
  net_.at(at_s(t), [this, m] {
    members_[static_cast<std::size_t>(m)]->crashed = true;
    net_.set_down(m, true);
    side_changed_at_ = now_s();
  });
}

void EngineSim::freeze(int m, double t, double for_s) {
  net_.at(at_s(t), [this, m, t, for_s] { members_[static_cast<std::size_t>(m)]->frozen_until = at_s(t + for_s); });
  net_.at(at_s(t + for_s), [this, m] {
    auto& mb = *members_[static_cast<std::size_t>(m)];
    if (mb.crashed) return;
    if (mb.tree->in_round())
      step(m);
    else
      start_period(m);
  });
}

void EngineSim::partition(std::vector<int> side_of_member, double t) {
  net_.at(at_s(t), [this, s = std::move(side_of_member)] {
    net_.set_sides(s);
    side_changed_at_ = now_s();
  });
}

void EngineSim::heal(double t) {
  net_.at(at_s(t), [this] {
    net_.set_sides({});
    side_changed_at_ = now_s();
  });
}

void EngineSim::slow(int m, double latency_factor) { net_.set_slow(m, latency_factor); }
void EngineSim::loss(double p) { net_.set_loss(p); }

std::size_t EngineSim::side_alive(int m) const {
  std::size_t n = 0;
  for (int k = 0; k < cfg_.members; ++k)
    if (!members_[static_cast<std::size_t>(k)]->crashed && net_.side_of(k) == net_.side_of(m)) ++n;
  return n;
}

std::size_t EngineSim::alive_seen_by(int m) const { return members_[static_cast<std::size_t>(m)]->tree->alive().size(); }

void EngineSim::run_until(double t) { net_.run_until(at_s(t)); }

void EngineSim::start_period(int m) {
  auto& mb = *members_[static_cast<std::size_t>(m)];
  if (mb.crashed || mb.stopped || frozen(m) || mb.tree->in_round()) return;  // a frozen one starts when it thaws
  ++mb.periods;
  begin(m, mb.engine->begin_period(), false);
}

void EngineSim::begin(int m, scoutd::RoundEngine::Round r, bool gather) {
  auto& mb = *members_[static_cast<std::size_t>(m)];
  mb.gather = gather;
  mb.round_began = now_s();
  mb.bytes_in = 0;
  mb.cpu_s = 0;
  auto combine = [&mb, c = std::move(r.combine)](Bytes& acc, const Bytes& child) {
    const auto t = host::now();
    mb.bytes_in += child.size();
    c(acc, child);
    mb.cpu_s += std::chrono::duration<double>(host::now() - t).count();
  };
  auto decide = [&mb, d = std::move(r.decide)](const Bytes& acc, const std::vector<int>& lost) {
    const auto t = host::now();
    Bytes out = d(acc, lost);
    mb.cpu_s += std::chrono::duration<double>(host::now() - t).count();
    return out;
  };
  mb.tree->begin(r.up, combine, decide);
  step(m);
}

void EngineSim::step(int m) {
  auto& mb = *members_[static_cast<std::size_t>(m)];
  if (mb.crashed || mb.stopped || frozen(m) || !mb.tree->in_round()) return;
  if (!mb.tree->advance()) {
    schedule_wake(m);
    return;
  }
  const c3::RoundResult& res = mb.tree->result();
  if (mb.gather && res.root) gathers_.push_back({now_s(), mb.bytes_in, mb.cpu_s, m});
  if (on_round) on_round(now_s(), m, mb.gather, res);
  auto next = mb.engine->finished(res);
  // A round that took this member back (it asked to rejoin) is not one it
  // took part in: its book is compared from its next round on. A round whose
  // root decided nothing (it heard from a minority) brings no decision down.
  const bool rejoining = std::find(res.rejoined.begin(), res.rejoined.end(), m) != res.rejoined.end();
  if (res.complete && !res.down.empty() && !res.minority && !res.expelled && !rejoining) {
    const auto d = mb.engine->desk().book_digest();
    checker_.round(now_s(), m, res.root, mb.gather, {d.verdicts, d.resolved, d.hash});
  }
  if (next) {
    begin(m, std::move(*next), true);
    return;
  }
  if (!mb.engine->go_on()) {
    mb.stopped = true;
    return;
  }
  // As scoutd's loop does: the next period a period after this one ended.
  const auto period =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg_.scoutd.round_period_s));
  net_.at(clock_.now() + period, [this, m] { start_period(m); });
}

void EngineSim::schedule_wake(int m) {
  auto& mb = *members_[static_cast<std::size_t>(m)];
  const std::uint64_t stamp = ++mb.wake_stamp;
  net_.at(mb.tree->wake_at(), [this, m, stamp] {
    if (members_[static_cast<std::size_t>(m)]->wake_stamp == stamp) step(m);
  });
}

std::uint64_t EngineSim::trace_digest() const {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  for (const auto& v : verdicts_) {
    mix(&v.at_s, sizeof v.at_s);
    mix(&v.by, sizeof v.by);
    mix(v.kind.data(), v.kind.size());
    mix(v.status.data(), v.status.size());
    mix(v.key.data(), v.key.size());
    for (int r : v.ranks) mix(&r, sizeof r);
  }
  for (const auto& g : gathers_) {
    mix(&g.at_s, sizeof g.at_s);
    mix(&g.root_bytes_in, sizeof g.root_bytes_in);
    mix(&g.root, sizeof g.root);
  }
  for (int m = 0; m < cfg_.members; ++m) {
    const std::uint64_t b = net_.bytes_sent(m), p = periods(m);
    mix(&b, sizeof b);
    mix(&p, sizeof p);
  }
  return h;
}

}  // namespace scout::sim
