// The simulator's synchronous job (see workload.hpp).
#include "sim/workload.hpp"

#include <algorithm>
#include <cmath>

namespace scout::sim {

namespace {
// A deterministic number in [-1, 1) from (seed, rank, step).
double noise(std::uint64_t seed, int rank, std::uint64_t step) {
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ (static_cast<std::uint64_t>(rank) << 32) ^ step;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<double>(x >> 11) / static_cast<double>(1ull << 52) - 1.0;
}
}  // namespace

Workload::Workload(WorkloadOptions o, int members) : o_(o), ranks_(members * o.ranks_per_member) {
  if (o_.stopped_rank >= 0) halt_s_ = o_.stop_at_s;
  if (o_.crashed_rank >= 0) halt_s_ = halt_s_ < 0 ? o_.crash_at_s : std::min(halt_s_, o_.crash_at_s);
}

// The slowest rank sets the pace: with jitter j, the maximum over many
// ranks is close to compute * (1 + j).
double Workload::step_s(double t) const {
  double slowest = o_.compute_s * (1 + o_.jitter);
  if (o_.slow_rank >= 0 && t >= o_.slow_at_s) slowest = std::max(slowest, o_.compute_s * o_.slow_factor);
  return slowest + o_.collective_s;
}

std::uint64_t Workload::steps_at(double t) const {
  if (halt_s_ >= 0) t = std::min(t, halt_s_);
  if (t <= 0) return 0;
  if (o_.slow_rank < 0 || t < o_.slow_at_s) return static_cast<std::uint64_t>(t / step_s(0));
  const double before = o_.slow_at_s / step_s(0);
  return static_cast<std::uint64_t>(before + (t - o_.slow_at_s) / step_s(t));
}

double Workload::rank_compute(int rank, double t) const {
  // scoutd reports the median over the last 8 steps (observe/step_timing):
  // it moves once 5 slow steps are in the window.
  const bool slow = rank == o_.slow_rank && t >= o_.slow_at_s && (t - o_.slow_at_s) / step_s(t) >= 5;
  const double base = slow ? o_.compute_s * o_.slow_factor : o_.compute_s;
  // The jitter of single steps averages out to a per-rank bias.
  return base * (1 + o_.jitter * 0.5 * noise(o_.seed, rank, 0));
}

std::vector<scoutd::RankEvidence> Workload::evidence(int member, double t) const {
  std::vector<scoutd::RankEvidence> out;
  const std::uint64_t done = steps_at(t);
  const double step = step_s(t);
  const double since_step = halt_s_ >= 0 && t >= halt_s_ ? t - halt_s_ : std::fmod(std::max(t, 0.0), step);
  for (int k = 0; k < o_.ranks_per_member; ++k) {
    scoutd::RankEvidence e;
    e.rank = member * o_.ranks_per_member + k;
    e.node = "n" + std::to_string(member + 1);
    e.pid = 100000 + e.rank;
    e.attached = true;
    e.alive = true;
    e.comm_id = 1;
    e.kind = 2;  // allreduce
    e.steps = static_cast<int>(std::min<std::uint64_t>(done, 1u << 30));
    e.compute_s = rank_compute(e.rank, t);
    e.step_s = step;
    e.wait_s = std::max(0.0, step - e.compute_s);
    e.comm_wait[1] = e.wait_s;
    const bool halted = halt_s_ >= 0 && t >= halt_s_;
    const bool stopped = halted && e.rank == o_.stopped_rank && t >= o_.stop_at_s;
    const bool crashed = halted && e.rank == o_.crashed_rank && t >= o_.crash_at_s;
    if (stopped || crashed) {
      // Still in the step it was computing when it stopped.
      e.seq = done;
      e.in_collective = false;
      e.stalled_s = since_step;
      e.state = crashed ? 'X' : 'T';
      e.state_s = since_step;
      e.wchan = crashed ? "" : "do_signal_stop";
      if (crashed) {
        e.alive = false;
        e.death_ns = static_cast<std::int64_t>(o_.crash_at_s * 1e9);
        e.dead_s = since_step;
      }
    } else if (halted) {
      // Everyone else entered the next collective and waits in it.
      e.seq = done + 1;
      e.in_collective = true;
      e.stalled_s = since_step;
      e.state = 'S';
      e.state_s = since_step;
      e.wchan = "futex_wait_queue";
    } else {
      // Healthy: computing (in the first part of a step) or in the collective.
      const bool in_coll = since_step >= e.compute_s;
      e.seq = done + (in_coll ? 1 : 0);
      e.in_collective = in_coll;
      e.stalled_s = in_coll ? since_step - e.compute_s : since_step;
      e.state = in_coll ? 'S' : 'R';
      e.state_s = e.stalled_s;
      e.wchan = in_coll ? "futex_wait_queue" : "";
    }
    e.fingerprint = 0x9e3779b97f4a7c15ull ^ (e.seq * 0x100000001b3ull);
    out.push_back(std::move(e));
  }
  return out;
}

SimRanks::SimRanks(const Workload& w, int member, std::function<double()> now)
    : w_(w), member_(member), node_("n" + std::to_string(member + 1)), now_(std::move(now)) {}

std::vector<scoutd::RankEvidence> SimRanks::evidence(bool) const { return w_.evidence(member_, now_()); }

void SimRanks::mark_deaths_reported(const std::vector<int>& ranks) { reported_.insert(ranks.begin(), ranks.end()); }

// As RankWatcher::summary() summarises its records.
scoutd::LocalSummary SimRanks::summary() const {
  scoutd::LocalSummary sum;
  for (auto& e : evidence()) {
    ++sum.attached;
    if (!e.alive) {
      if (!reported_.count(e.rank)) ++sum.unreported_deaths;
      continue;
    }
    sum.max_stall_s = std::max(sum.max_stall_s, e.stalled_s);
    if (e.in_collective) ++sum.waiting;
    if (e.state == 'T' || e.state == 'D' || e.state == 'Z')
      sum.max_stopped_s = std::max(sum.max_stopped_s, std::min(e.stalled_s, e.state_s));
    sum.min_seq = std::min(sum.min_seq, e.seq);
    sum.max_seq = std::max(sum.max_seq, e.seq);
    if (e.steps >= 4) {
      ++sum.compute_hist[scoutd::compute_bin(e.compute_s)];
      sum.max_compute_s = std::max(sum.max_compute_s, e.compute_s);
    }
    for (auto& [c, wt] : e.comm_wait) {
      ++sum.comm_hist[scoutd::compute_bin(wt)];
      sum.max_comm_s = std::max(sum.max_comm_s, wt);
    }
  }
  return sum;
}

}  // namespace scout::sim
