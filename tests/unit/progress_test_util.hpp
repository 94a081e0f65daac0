// What the progress-rule unit tests share: a job's evidence, all ranks at
// one collective position, a ring of point-to-point waits, a rank outside MPI.
#pragma once

#include <string>
#include <vector>

#include "libc3/rank_record.hpp"
#include "scoutd/detect/progress_detector.hpp"

namespace progress_test {
using namespace scout::scoutd;
namespace c3 = scout::c3;

inline std::vector<RankEvidence> job(int n, std::uint64_t seq, bool waiting, double stalled) {
  std::vector<RankEvidence> v;
  for (int r = 0; r < n; ++r) {
    RankEvidence e;
    e.rank = r;
    e.node = "n" + std::to_string(r / 2 + 1);
    e.pid = 100 + r;
    e.attached = true;
    e.seq = seq;
    e.fingerprint = 0xAAAA;
    e.comm_id = 0xC0;
    e.kind = scout::c3::kAllreduce;
    e.in_collective = waiting;
    e.stalled_s = stalled;
    e.state = 'S';
    v.push_back(e);
  }
  return v;
}
inline DetectorOptions opt() { return {.stall_threshold_s = 2.0}; }
// n ranks in a 1-D ring halo: each waits in MPI_Waitall for both neighbours.
inline std::vector<RankEvidence> ring(int n, double stalled) {
  auto v = job(n, 5, false, stalled);
  for (int r = 0; r < n; ++r) {
    v[r].p2p_call = "MPI_Waitall";
    v[r].p2p_peers = {(r + n - 1) % n, (r + 1) % n};
    v[r].p2p_wait_s = stalled;
    v[r].p2p_ops = 100;
  }
  return v;
}
inline void outside(RankEvidence& e, char state) {
  e.p2p_call.clear();
  e.p2p_peers.clear();
  e.state = state;
  e.state_s = e.stalled_s;
}
}  // namespace progress_test
