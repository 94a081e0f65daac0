// Members running the real TreeRound over the simulated network (round_sim.hpp).
#include "sim/round_sim.hpp"

#include <chrono>
#include <cmath>
#include <cstring>

namespace scout::sim {

namespace {
std::uint64_t read_u64(const Bytes& b, std::size_t at) {
  std::uint64_t v = 0;
  if (b.size() >= at + 8) std::memcpy(&v, b.data() + at, 8);
  return v;
}
void put_u64(Bytes& b, std::size_t at, std::uint64_t v) {
  if (b.size() < at + 8) b.resize(at + 8);
  std::memcpy(b.data() + at, &v, 8);
}
}  // namespace

RoundSim::RoundSim(RoundSimConfig cfg, PayloadModel model)
    : cfg_(cfg), model_(std::move(model)), net_(cfg.members, clock_, cfg.link, cfg.seed) {
  costs_.resize(static_cast<std::size_t>(cfg_.members));
  epoch_ = Clock::time_point{} + std::chrono::hours(1);
  clock_.set(epoch_);
  members_.resize(static_cast<std::size_t>(cfg_.members));
  for (int m = 0; m < cfg_.members; ++m)
    members_[static_cast<std::size_t>(m)].tree =
        std::make_unique<c3::TreeRound>(net_.transport(m), clock_, c3::TreeRound::Options{cfg_.hop_timeout_s});
  net_.on_arrival = [this](int m) { arrived(m); };
  for (int m = 0; m < cfg_.members; ++m) net_.at(epoch_, [this, m] { start_round(m); });
}

Clock::time_point RoundSim::at_s(double t) const {
  return epoch_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(t));
}

double RoundSim::now_s() const {
  return std::chrono::duration<double>(clock_.time() - epoch_).count();
}

bool RoundSim::frozen(int m) const { return clock_.time() < members_[static_cast<std::size_t>(m)].frozen_until; }

void RoundSim::crash(int m, double t) {
  net_.at(at_s(t), [this, m] {
    members_[static_cast<std::size_t>(m)].crashed = true;
    net_.set_down(m, true);
  });
}

void RoundSim::freeze(int m, double t, double for_s) {
  net_.at(at_s(t), [this, m, t, for_s] { members_[static_cast<std::size_t>(m)].frozen_until = at_s(t + for_s); });
  net_.at(at_s(t + for_s), [this, m] {
    auto& mb = members_[static_cast<std::size_t>(m)];
    if (mb.crashed) return;
    if (mb.tree->in_round())
      step(m);
    else
      start_round(m);
  });
}

void RoundSim::partition(std::vector<int> side_of_member, double t) {
  net_.at(at_s(t), [this, s = std::move(side_of_member)] { net_.set_sides(s); });
}

void RoundSim::heal(double t) {
  net_.at(at_s(t), [this] { net_.set_sides({}); });
}

void RoundSim::slow(int m, double latency_factor) { net_.set_slow(m, latency_factor); }
void RoundSim::loss(double p) { net_.set_loss(p); }

void RoundSim::sluggish(int m, double t, double poll_s) {
  net_.at(at_s(t), [this, m, poll_s] { members_[static_cast<std::size_t>(m)].poll_s = poll_s; });
}

void RoundSim::arrived(int m) {
  auto& mb = members_[static_cast<std::size_t>(m)];
  if (mb.poll_s <= 0) {
    step(m);
    return;
  }
  if (mb.poll_due) return;
  mb.poll_due = true;
  const double t = now_s();
  const double next = (std::floor(t / mb.poll_s) + 1) * mb.poll_s;
  net_.at(at_s(next), [this, m] {
    members_[static_cast<std::size_t>(m)].poll_due = false;
    step(m);
  });
}

void RoundSim::run_until(double t) { net_.run_until(at_s(t)); }

void RoundSim::start_round(int m) {
  auto& mb = members_[static_cast<std::size_t>(m)];
  if (mb.crashed || frozen(m) || mb.tree->in_round()) return;  // a frozen member starts again when it thaws
  mb.round_started = clock_.now();
  if (model_.up) {
    using host = std::chrono::steady_clock;
    auto& cost = costs_[static_cast<std::size_t>(m)];
    auto combine = [this, &cost](Bytes& acc, const Bytes& child) {
      const auto t = host::now();
      cost.bytes_in += child.size();
      model_.combine(acc, child);
      cost.combine_s += std::chrono::duration<double>(host::now() - t).count();
    };
    auto decide = [this, &cost](const Bytes& acc, const std::vector<int>& lost) {
      const auto t = host::now();
      Bytes d = model_.decide(acc, lost);
      cost.decide_s += std::chrono::duration<double>(host::now() - t).count();
      return d;
    };
    mb.tree->begin(model_.up(m), combine, decide);
    step(m);
    return;
  }
  Bytes up;
  put_u64(up, 0, 1);  // one contributor: this member
  auto combine = [](Bytes& acc, const Bytes& child) { put_u64(acc, 0, read_u64(acc, 0) + read_u64(child, 0)); };
  auto decide = [m](const Bytes& acc, const std::vector<int>&) {
    Bytes d;
    put_u64(d, 0, read_u64(acc, 0));
    put_u64(d, 8, static_cast<std::uint64_t>(m));
    return d;
  };
  mb.tree->begin(up, combine, decide);
  step(m);
}

void RoundSim::step(int m) {
  auto& mb = members_[static_cast<std::size_t>(m)];
  if (mb.crashed || frozen(m) || !mb.tree->in_round()) return;
  if (!mb.tree->advance()) {
    schedule_wake(m);
    return;
  }
  const c3::RoundResult& r = mb.tree->result();
  RoundRecord rec;
  rec.member = m;
  rec.round = mb.tree->round();
  rec.started_s = std::chrono::duration<double>(mb.round_started - epoch_).count();
  rec.seconds = r.seconds;
  rec.complete = r.complete;
  rec.root = r.root;
  rec.minority = r.minority;
  rec.expelled = r.expelled;
  if (!model_.up && r.complete && r.down.size() >= 16) {
    rec.contributors = read_u64(r.down, 0);
    rec.decided_by = static_cast<int>(read_u64(r.down, 8));
  }
  rec.newly_lost = r.newly_lost;
  rec.rejoined = r.rejoined;
  rec.alive = static_cast<int>(mb.tree->alive().size());
  records_.push_back(rec);
  if (on_record) on_record(records_.back());
  // As scoutd does: the next round starts a period after this one ended.
  const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg_.period_s));
  net_.at(clock_.now() + period, [this, m] { start_round(m); });
}

void RoundSim::schedule_wake(int m) {
  auto& mb = members_[static_cast<std::size_t>(m)];
  const std::uint64_t stamp = ++mb.wake_stamp;
  net_.at(mb.tree->wake_at(), [this, m, stamp] {
    if (members_[static_cast<std::size_t>(m)].wake_stamp == stamp) step(m);
  });
}

std::uint64_t RoundSim::trace_digest() const {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  for (const auto& r : records_) {
    mix(&r.member, sizeof r.member);
    mix(&r.round, sizeof r.round);
    mix(&r.started_s, sizeof r.started_s);
    mix(&r.seconds, sizeof r.seconds);
    const unsigned char flags = static_cast<unsigned char>(r.complete | r.root << 1 | r.minority << 2 | r.expelled << 3);
    mix(&flags, 1);
    mix(&r.contributors, sizeof r.contributors);
    mix(&r.decided_by, sizeof r.decided_by);
    for (int w : r.newly_lost) mix(&w, sizeof w);
    for (int w : r.rejoined) mix(&w, sizeof w);
    mix(&r.alive, sizeof r.alive);
  }
  return h;
}

}  // namespace scout::sim
