// What a consensus round (tree_round.hpp) needs from the world: a transport
// that moves tagged byte messages between the members without blocking, and
// a clock. Production uses MPI point-to-point on a duplicated communicator
// (MpiTransport) and the monotonic wall clock (WallClock); the simulator
// (sim/) runs thousands of members in one process over a simulated network
// and a virtual clock. The round's code is the same in both.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "libc3/round_message.hpp"

namespace scout::c3 {

using Clock = std::chrono::steady_clock;  // the time type; the source is a RoundClock

class RoundClock {
 public:
  virtual ~RoundClock() = default;
  virtual Clock::time_point now() = 0;
  // Used only by TreeRound::run's polling loop (production): sleeps up to `d`.
  virtual void sleep_for(Clock::duration d) = 0;
};

// The monotonic wall clock.
class WallClock final : public RoundClock {
 public:
  Clock::time_point now() override;
  void sleep_for(Clock::duration d) override;
};

struct Received {
  int source = -1;
  int tag = 0;
  Bytes bytes;
};

class RoundTransport {
 public:
  virtual ~RoundTransport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Queues `bytes` for `dest`; never blocks. False when it was refused at
  // once (the peer is gone); a message that is lost later is noticed by the
  // round's deadlines.
  virtual bool send(int dest, int tag, Bytes bytes) = 0;
  // The next message that arrived, if any; never blocks.
  virtual std::optional<Received> receive() = 0;
  // Completes queued sends (bounded memory for peers that never receive).
  virtual void progress() {}
};

}  // namespace scout::c3
