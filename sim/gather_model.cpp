// scoutd's evidence gather for the simulator (see gather_model.hpp).
#include "sim/gather_model.hpp"

#include <nlohmann/json.hpp>

#include "scoutd/detect/progress_detector.hpp"
#include "scoutd/observe/rank_evidence.hpp"
#include "scoutd/wire/peer_messages.hpp"

namespace scout::sim {

namespace w = scoutd::wire;

PayloadModel gather_model(GatherModelOptions opt, std::vector<std::vector<int>>* named) {
  PayloadModel m;
  m.up = [opt](int member) {
    w::Gather g;
    auto& ev = g.ranks;
    for (int k = 0; k < opt.ranks_per_member; ++k) {
      scoutd::RankEvidence e;
      e.rank = member * opt.ranks_per_member + k;
      e.node = "n" + std::to_string(member);
      e.pid = 100000 + e.rank;
      e.attached = true;
      e.alive = true;
      const bool stopped = e.rank == opt.stopped_rank;
      e.seq = stopped ? 4199 : 4200;  // the others wait in the next collective
      e.fingerprint = 0x9e3779b97f4a7c15ull;
      e.comm_id = 1;
      e.kind = 2;
      e.in_collective = !stopped;
      e.stalled_s = 12.5;
      e.state = stopped ? 'T' : 'S';
      e.wchan = stopped ? "do_signal_stop" : "futex_wait_queue";
      e.steps = 40;
      e.step_s = 0.2;
      e.compute_s = 0.15;
      e.wait_s = 0.05;
      e.comm_wait[1] = 0.05;
      ev.push_back(e);
    }
    return w::encode_gather(g);
  };
  m.combine = w::combine_gathers;
  m.decide = [named](const Bytes& acc, const std::vector<int>&) {
    auto ev = w::decode_gather(acc).value_or(w::Gather{}).ranks;
    scoutd::DetectorOptions dopt;
    std::vector<int> ranks;
    for (const auto& d : scoutd::detect_progress(ev, dopt))
      if (d.status == c3::VerdictStatus::kAttributed) ranks.insert(ranks.end(), d.ranks.begin(), d.ranks.end());
    if (named) named->push_back(ranks);
    return w::encode_down(w::Down{});
  };
  return m;
}

}  // namespace scout::sim
