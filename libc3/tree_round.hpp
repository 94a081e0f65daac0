// libc3 consensus rounds between observers (scoutds) over MPI point-to-point
// on a duplicated communicator. A round is a reduction up a binary tree of
// the live members and a broadcast back down: O(log nodes) steps, constant
// traffic per node. Every wait has a deadline: a silent child is suspected,
// its children are adopted by their grandparent for the way down, and the
// root's list of lost members is applied by every survivor, so the survivors
// keep completing rounds. Must never block without a deadline.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "libc3/round_message.hpp"

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

  TreeRound(MPI_Comm parent, Options opt);
  ~TreeRound();
  TreeRound(const TreeRound&) = delete;
  TreeRound& operator=(const TreeRound&) = delete;

  RoundResult run(const Bytes& up, const Combine& combine, const Decide& decide);

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

 private:
  struct Msg {
    int source;
    int tag;
    std::uint64_t round;
    std::vector<int> lost;
    Bytes payload;
  };
  using Clock = std::chrono::steady_clock;

  void send(int dest, int tag, const std::vector<int>& lost, const Bytes& payload);
  std::optional<Msg> wait_for(int tag, const std::vector<int>& sources, Clock::time_point deadline);
  void poll_sends();
  bool receive_one();
  RoundResult run_minority(RoundResult& res, Clock::time_point t0, Clock::duration hop);
  std::optional<Msg> wait_for_rejoin(Clock::time_point deadline);
  int index_of(int world) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  Options opt_;
  int me_ = 0, size_ = 0;
  std::vector<int> alive_;
  std::vector<bool> is_lost_;
  std::uint64_t malformed_ = 0;
  std::set<int> join_requests_;     // lost members that asked back in
  bool minority_ = false;           // in run_minority: accept a rejoin from anyone
  Clock::time_point last_join_{};
  std::uint64_t round_ = 0;
  std::deque<Msg> inbox_;
  struct PendingSend {
    MPI_Request req;
    std::vector<std::uint8_t> buf;
  };
  std::deque<PendingSend> sends_;
  std::uint64_t bytes_sent_ = 0, msgs_sent_ = 0;
};

}  // namespace scout::c3
