// A simulated network and a virtual clock for consensus rounds: N members in
// one process, each with its own transport (libc3/round_transport.hpp), and
// one event queue ordered by (virtual time, insertion), so that the same
// seed gives the same trace, byte for byte. Links have a latency and a
// bandwidth (each sender's link sends one message at a time, so a root that
// fans out pays for every byte); messages between one pair never overtake
// each other, as in MPI. Faults: a member down (what it sends and what is
// sent to it vanishes), a partition into sides, slow members (their links'
// latency multiplied), random message loss.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <vector>

#include "libc3/round_transport.hpp"

namespace scout::sim {

using c3::Bytes;
using c3::Clock;

class VirtualClock final : public c3::RoundClock {
 public:
  Clock::time_point now() override { return t_; }
  void sleep_for(Clock::duration d) override { t_ += d; }
  void set(Clock::time_point t) { t_ = t; }
  Clock::time_point time() const { return t_; }

 private:
  Clock::time_point t_{};
};

struct LinkModel {
  double latency_s = 60e-6;       // one hop, one way
  double bandwidth_Bps = 1.0e9;   // each member's sending link
};

class SimNetwork;

class SimTransport final : public c3::RoundTransport {
 public:
  SimTransport(SimNetwork& net, int me) : net_(net), me_(me) {}
  int rank() const override { return me_; }
  int size() const override;
  bool send(int dest, int tag, Bytes bytes) override;
  std::optional<c3::Received> receive() override;
  void arrive(c3::Received r) { inbox_.push_back(std::move(r)); }
  void clear() { inbox_.clear(); }

 private:
  SimNetwork& net_;
  int me_;
  std::deque<c3::Received> inbox_;
};

class SimNetwork {
 public:
  SimNetwork(int n, VirtualClock& clock, LinkModel link, std::uint64_t seed);

  int size() const noexcept { return n_; }
  VirtualClock& clock() noexcept { return clock_; }
  SimTransport& transport(int member) { return *transports_[static_cast<std::size_t>(member)]; }

  // Faults.
  void set_down(int member, bool down);
  bool down(int member) const { return down_[static_cast<std::size_t>(member)]; }
  void set_sides(std::vector<int> side_of_member);  // empty: no partition
  int side_of(int m) const { return side_.empty() ? 0 : side_[static_cast<std::size_t>(m)]; }
  void set_slow(int member, double latency_factor);
  void set_loss(double probability) { loss_ = probability; }

  // The event queue. A callback runs at its virtual time; events of equal
  // time run in the order they were scheduled.
  void at(Clock::time_point t, std::function<void()> fn);
  // Runs events until the queue is empty or the next one is after `until`;
  // the clock is left at `until` (or the last event's time).
  void run_until(Clock::time_point until);
  bool idle() const { return events_.empty(); }

  // Called for each message that arrives at a member (after it is in that
  // member's transport): the driver lets the member act on it.
  std::function<void(int member)> on_arrival;

  // Traffic, for the tables.
  std::uint64_t bytes_sent(int member) const { return bytes_[static_cast<std::size_t>(member)]; }
  std::uint64_t messages_dropped() const noexcept { return dropped_; }

  void send(int from, int dest, int tag, Bytes bytes);

 private:
  struct Event {
    Clock::time_point t;
    std::uint64_t seq;
    std::function<void()> fn;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.t != b.t ? a.t > b.t : a.seq > b.seq;
    }
  };
  int n_;
  VirtualClock& clock_;
  LinkModel link_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<SimTransport>> transports_;
  std::vector<bool> down_;
  std::vector<int> side_;
  std::vector<double> slow_;
  std::vector<Clock::time_point> link_free_;            // each sender's link
  std::map<std::pair<int, int>, Clock::time_point> last_arrival_;  // per pair: no overtaking
  std::vector<std::uint64_t> bytes_;
  double loss_ = 0;
  std::uint64_t dropped_ = 0, seq_ = 0;
  std::priority_queue<Event, std::vector<Event>, Later> events_;
};

}  // namespace scout::sim
