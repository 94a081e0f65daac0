// Simulated network and virtual clock (see sim_network.hpp).
#include "sim/sim_network.hpp"

#include <algorithm>

namespace scout::sim {

int SimTransport::size() const { return net_.size(); }

bool SimTransport::send(int dest, int tag, Bytes bytes) {
  if (dest < 0 || dest >= net_.size()) return false;
  net_.send(me_, dest, tag, std::move(bytes));
  return true;  // like MPI_Isend: a message lost on the way is noticed by deadlines
}

std::optional<c3::Received> SimTransport::receive() {
  if (inbox_.empty()) return std::nullopt;
  c3::Received r = std::move(inbox_.front());
  inbox_.pop_front();
  return r;
}

SimNetwork::SimNetwork(int n, VirtualClock& clock, LinkModel link, std::uint64_t seed)
    : n_(n), clock_(clock), link_(link), rng_(seed) {
  const auto un = static_cast<std::size_t>(n);
  transports_.reserve(un);
  for (int i = 0; i < n; ++i) transports_.push_back(std::make_unique<SimTransport>(*this, i));
  down_.assign(un, false);
  slow_.assign(un, 1.0);
  link_free_.assign(un, Clock::time_point{});
  bytes_.assign(un, 0);
}

void SimNetwork::set_down(int member, bool down) {
  down_[static_cast<std::size_t>(member)] = down;
  if (down) transports_[static_cast<std::size_t>(member)]->clear();
}

void SimNetwork::set_sides(std::vector<int> side_of_member) { side_ = std::move(side_of_member); }

void SimNetwork::set_slow(int member, double latency_factor) {
  slow_[static_cast<std::size_t>(member)] = latency_factor;
}

void SimNetwork::at(Clock::time_point t, std::function<void()> fn) {
  events_.push(Event{std::max(t, clock_.now()), seq_++, std::move(fn)});
}

void SimNetwork::run_until(Clock::time_point until) {
  while (!events_.empty() && events_.top().t <= until) {
    // Moved out of the top before pop (priority_queue offers only const access).
    Event e = std::move(const_cast<Event&>(events_.top()));
    events_.pop();
    clock_.set(e.t);
    e.fn();
  }
  if (clock_.now() < until) clock_.set(until);
}

void SimNetwork::send(int from, int dest, int tag, Bytes bytes) {
  const auto f = static_cast<std::size_t>(from), d = static_cast<std::size_t>(dest);
  bytes_[f] += bytes.size();
  const bool cut = !side_.empty() && side_[f] != side_[d];
  // A draw for every message, lost or not, keeps the random stream (and so
  // the trace) independent of which messages a fault removed.
  const bool lost = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < loss_;
  if (down_[f] || down_[d] || cut || lost) {
    ++dropped_;
    return;
  }
  using sec = std::chrono::duration<double>;
  const auto now = clock_.now();
  const auto wire = std::chrono::duration_cast<Clock::duration>(sec(static_cast<double>(bytes.size()) / link_.bandwidth_Bps));
  const auto start = std::max(now, link_free_[f]);
  link_free_[f] = start + wire;
  const auto latency =
      std::chrono::duration_cast<Clock::duration>(sec(link_.latency_s * std::max(slow_[f], slow_[d])));
  auto arrive = start + wire + latency;
  auto& last = last_arrival_[{from, dest}];
  arrive = std::max(arrive, last);
  last = arrive;
  c3::Received r{from, tag, std::move(bytes)};
  at(arrive, [this, dest, r = std::move(r)]() mutable {
    if (down_[static_cast<std::size_t>(dest)]) return;
    transports_[static_cast<std::size_t>(dest)]->arrive(std::move(r));
    if (on_arrival) on_arrival(dest);
  });
}

}  // namespace scout::sim
