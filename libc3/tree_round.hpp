// libc3 consensus rounds between observers (scoutds), over a transport and a
// clock (round_transport.hpp: MPI point-to-point on a duplicated
// communicator and the wall clock in production, a simulated network and a
// virtual clock in sim/). A round is a reduction up a binary tree of
// the live members and a broadcast back down: O(log nodes) steps, constant
// traffic per node. Every wait has a deadline: a silent child is suspected,
// its children are adopted by their grandparent for the way down, and the
// root's list of lost members is applied by every survivor, so the survivors
// keep completing rounds. While the root waits for a slow subtree it sends a
// keep-alive wave down the tree every half hop; a member waiting for its
// down message that hears no sign of life from above for two hops (and a
// quarter hop per level of depth) holds its parent lost: a lost root costs
// two hops, not the whole round's budget.
// Must never block without a deadline.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "libc3/round_message.hpp"
#include "libc3/round_transport.hpp"

namespace scout::c3 {

struct RoundResult {
  bool complete = false;       // a down message from the root arrived
  bool root = false;           // this member decided the round
  bool expelled = false;       // the others declared this member lost
  Bytes down;                  // the root's decision (empty if !complete)
  std::vector<int> newly_lost; // world ranks removed in this round
  std::vector<int> rejoined;   // world ranks taken back in this round (maybe this one)
  bool minority = false;       // this member sees no strict majority: nothing decided
  double seconds = 0;          // wall time of the round on this member
};

class TreeRound {
 public:
  struct Options {
    double hop_timeout_s = 1.0;  // budget per tree level and direction
  };
  // combine(acc, child_payload): merge a child's payload into acc.
  using Combine = std::function<void(Bytes& acc, const Bytes& child)>;
  // decide(acc, lost): at the root, the payload sent down to everyone.
  using Decide = std::function<Bytes(const Bytes& acc, const std::vector<int>& lost)>;

  // Production: MPI on a duplicate of `parent` and the wall clock.
  TreeRound(MPI_Comm parent, Options opt);
  // Any transport and clock (the simulator's); both outlive the round.
  TreeRound(RoundTransport& transport, RoundClock& clock, Options opt);
  ~TreeRound();
  TreeRound(const TreeRound&) = delete;
  TreeRound& operator=(const TreeRound&) = delete;

  // One whole round, polling the transport until it completes (production).
  RoundResult run(const Bytes& up, const Combine& combine, const Decide& decide);

  // The same round as events, for a driver that owns the loop (the
  // simulator): begin() starts it, advance() takes what arrived and acts on
  // the clock's time, and returns true once the round is over (result()
  // then holds it); wake_at() is when the round next needs time to pass if
  // nothing arrives. run() is begin() then advance() until done.
  void begin(const Bytes& up, const Combine& combine, const Decide& decide);
  bool advance();
  bool in_round() const noexcept { return state_ != State::kIdle; }
  Clock::time_point wake_at() const noexcept { return wake_at_; }
  const RoundResult& result() const noexcept { return res_; }

  int world_rank() const noexcept { return me_; }
  int world_size() const noexcept { return size_; }
  const std::vector<int>& alive() const noexcept { return alive_; }
  std::vector<int> lost() const;
  // The members this one still sees are a strict majority of the original
  // ones: only then may it decide verdicts (a minority never writes).
  bool has_quorum() const noexcept { return 2 * alive_.size() > static_cast<std::size_t>(size_); }
  bool is_root() const noexcept { return !alive_.empty() && alive_.front() == me_; }
  std::uint64_t round() const noexcept { return round_; }
  std::uint64_t bytes_sent() const noexcept { return bytes_sent_; }
  std::uint64_t messages_sent() const noexcept { return msgs_sent_; }
  std::uint64_t malformed() const noexcept { return malformed_; }  // messages dropped by the parser
  // Contributions to the round after a rejoin that arrived before it (kept).
  std::uint64_t early_contributions() const noexcept { return early_kept_; }

 private:
  struct Msg {
    int source;
    int tag;
    std::uint64_t round;
    std::vector<int> lost;
    Bytes payload;
  };
  enum class State { kIdle, kUp, kDown, kMinority };

  void send(int dest, int tag, const std::vector<int>& lost, const Bytes& payload);
  bool pump();  // takes every message that arrived into the inbox (got_: any did)
  void take(Received r);
  std::optional<Msg> find(int tag, int source);  // source -1: any
  std::optional<Msg> find_rejoin();
  void begin_minority();
  void finish_minority(std::optional<Msg> m);
  void finish_up();
  void finish_down(std::vector<int> lost, const std::vector<int>& rejoining);
  void finish(Clock::time_point t);
  void send_alive(std::uint64_t wave);  // to the children, and to the grandchildren under a silent child
  void update_wake();
  Clock::time_point silent_until() const;
  int index_of(int world) const;

  std::unique_ptr<RoundTransport> owned_transport_;
  std::unique_ptr<RoundClock> owned_clock_;
  RoundTransport& net_;
  RoundClock& clock_;
  Options opt_;
  int me_ = 0, size_ = 0;
  std::vector<int> alive_;
  std::vector<bool> is_lost_;
  std::uint64_t malformed_ = 0;
  std::uint64_t early_kept_ = 0;
  std::set<int> join_requests_;     // lost members that asked back in
  bool minority_ = false;           // in a minority round: accept a rejoin from anyone
  Clock::time_point last_join_{};
  bool asked_ = false;              // sent JOIN requests at least once
  std::uint64_t round_ = 0;
  std::deque<Msg> inbox_;
  std::uint64_t bytes_sent_ = 0, msgs_sent_ = 0;

  // The round in progress.
  State state_ = State::kIdle;
  RoundResult res_;
  Combine combine_;
  Decide decide_;
  Clock::time_point t0_{}, wake_at_{};
  Clock::time_point deadline_{};    // the state's own deadline
  Clock::time_point next_alive_{};  // root: when the next keep-alive wave leaves
  Clock::time_point heard_{};       // waiting down: the last sign of life from above
  std::uint64_t wave_ = 0;          // the last keep-alive wave sent or forwarded
  Clock::duration hop_{};
  int n_ = 0, i_ = 0, tree_height_ = 0, depth_ = 0;
  int child_ = 0;  // 0, 1: the child whose contribution is awaited; 2: done
  Bytes acc_;
  std::vector<int> suspects_, adopted_;
  bool got_ = false;  // the last advance() received something
};

}  // namespace scout::c3
