// N members running the real consensus round (libc3 TreeRound, the code
// scoutd runs) over the simulated network (sim_network.hpp) with a virtual
// clock: each member starts a round `period_s` after its last one ended (as
// scoutd's loop does), contributes its own
// payload, and acts on every message the moment it arrives and on every
// deadline the moment it passes. Faults are applied at virtual times:
// a member lost (crash), frozen for a while (SIGSTOP of its scoutd), a
// partition and its healing, slow members, message loss.
//
// The payload up is a count of contributors (8 bytes, summed in the tree),
// so the root knows how many members its decision rests on; the decision
// down is that count and the root's own rank. A RoundRecord per completed
// round and member is what the tests and the tables read.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "libc3/tree_round.hpp"
#include "sim/sim_network.hpp"

namespace scout::sim {

struct RoundSimConfig {
  int members = 8;
  double period_s = 1.0;       // from the end of a member's round to its next one
  double hop_timeout_s = 0.5;  // TreeRound's budget per level and direction
  LinkModel link;
  std::uint64_t seed = 1;
};

// What the members send up and how it is merged: by default each member
// contributes a count (8 bytes, summed) and the root's decision is that count
// and its rank. A model replaces the three (scout-sim's gather: scoutd's own
// evidence encoding, combine_gathers and detectors).
struct PayloadModel {
  std::function<Bytes(int member)> up;
  c3::TreeRound::Combine combine;
  c3::TreeRound::Decide decide;
};

// What a member's rounds cost it on the host (not in virtual time).
struct MemberCost {
  std::uint64_t bytes_in = 0;  // payload bytes received from its children
  double combine_s = 0;        // host CPU seconds merging them
  double decide_s = 0;         // host CPU seconds deciding (the root)
};

struct RoundRecord {
  int member = -1;
  std::uint64_t round = 0;          // the member's round number after the round
  double started_s = 0, seconds = 0;
  bool complete = false, root = false, minority = false, expelled = false;
  std::uint64_t contributors = 0;   // from the decision: members the root heard
  int decided_by = -1;              // the root that decided (-1: nothing decided)
  std::vector<int> newly_lost, rejoined;
  int alive = 0;                    // members this one sees after the round
};

class RoundSim {
 public:
  explicit RoundSim(RoundSimConfig cfg, PayloadModel model = {});

  // Faults at virtual time t (seconds from the start).
  void crash(int member, double t);                 // lost for good
  void freeze(int member, double t, double for_s);  // stops acting, then resumes
  void partition(std::vector<int> side_of_member, double t);
  void heal(double t);
  void slow(int member, double latency_factor);
  // A member on a loaded host from virtual time t on: it looks at what
  // arrived only every poll_s (scoutd not scheduled), so messages sent
  // apart reach it in one look.
  void sluggish(int member, double t, double poll_s);
  void loss(double probability);

  // Runs until virtual time t (seconds from the start).
  void run_until(double t);
  double now_s() const;

  const std::vector<RoundRecord>& records() const noexcept { return records_; }
  const MemberCost& cost(int m) const { return costs_[static_cast<std::size_t>(m)]; }
  std::function<void(const RoundRecord&)> on_record;  // each record as it is made
  const c3::TreeRound& member(int m) const { return *members_[static_cast<std::size_t>(m)].tree; }
  bool crashed(int m) const { return members_[static_cast<std::size_t>(m)].crashed; }
  SimNetwork& network() noexcept { return net_; }
  // A digest of every record, for "the same seed gives the same trace".
  std::uint64_t trace_digest() const;

 private:
  struct Member {
    std::unique_ptr<c3::TreeRound> tree;
    bool crashed = false;
    Clock::time_point frozen_until{};
    Clock::time_point round_started{};
    std::uint64_t wake_stamp = 0;  // only the newest scheduled wake acts
    double poll_s = 0;             // sluggish(): arrivals looked at every poll_s
    bool poll_due = false;         // a look is already scheduled
  };
  void start_round(int m);
  void step(int m);  // lets member m act on its time and inbox
  void schedule_wake(int m);
  void arrived(int m);
  bool frozen(int m) const;
  Clock::time_point at_s(double t) const;

  RoundSimConfig cfg_;
  PayloadModel model_;
  std::vector<MemberCost> costs_;
  VirtualClock clock_;
  SimNetwork net_;
  std::vector<Member> members_;
  std::vector<RoundRecord> records_;
  Clock::time_point epoch_{};
};

}  // namespace scout::sim
