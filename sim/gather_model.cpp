// scoutd's evidence gather for the simulator (see gather_model.hpp).
#include "sim/gather_model.hpp"

#include <nlohmann/json.hpp>

#include "scoutd/detect/progress_detector.hpp"
#include "scoutd/observe/rank_evidence.hpp"
#include "scoutd/wire/peer_messages.hpp"

namespace scout::sim {

namespace w = scoutd::wire;

namespace {

// Where a rank of a real Open MPI 4.1 job is when the job hangs: polling
// inside MPI_Allreduce (its innermost frames differ from rank to rank), or
// stopped in its own computation.
std::vector<std::string> stack_of(int rank, bool stopped) {
  if (stopped)
    return {"clock_nanosleep", "__nanosleep", "compute_forward", "train_step", "main", "__libc_start_call_main",
            "__libc_start_main", "_start"};
  static const char* inner[] = {"opal_progress", "mca_btl_vader_component_progress", "mca_pml_ob1_progress"};
  return {inner[rank % 3], "ompi_request_default_wait", "ompi_coll_base_allreduce_intra_recursivedoubling",
          "ompi_coll_tuned_allreduce_intra_dec_fixed", "PMPI_Allreduce", "MPI_Allreduce", "exchange_gradients",
          "train_step", "main", "__libc_start_call_main", "__libc_start_main", "_start"};
}

}  // namespace

PayloadModel gather_model(GatherModelOptions opt, std::vector<GatherSeen>* seen, std::uint64_t* stacks_per_rank_bytes) {
  PayloadModel m;
  m.up = [opt, stacks_per_rank_bytes](int member) {
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
      if (opt.stacks) {
        e.stack = stack_of(e.rank, stopped);
        if (stacks_per_rank_bytes)
          *stacks_per_rank_bytes += nlohmann::json{{"stack", {{"frames", e.stack}}}}.dump().size() + 1;
        // What the progress participant does (round/progress_part.cpp).
        g.stacks.add(e.rank, e.stack, e.stack_error);
        e.stack.clear();
      }
      ev.push_back(e);
    }
    return w::encode_gather(g);
  };
  m.combine = w::combine_gathers;
  m.decide = [seen](const Bytes& acc, const std::vector<int>&) {
    auto g = w::decode_gather(acc).value_or(w::Gather{});
    scoutd::DetectorOptions dopt;
    GatherSeen s;
    for (const auto& d : scoutd::detect_progress(g.ranks, dopt))
      if (d.status == c3::VerdictStatus::kAttributed) s.named.insert(s.named.end(), d.ranks.begin(), d.ranks.end());
    if (!g.stacks.empty()) {
      s.stack_bytes = g.stacks.to_wire().dump().size();
      const auto classes = g.stacks.classes();
      s.stack_classes = classes["classes"].size();
      for (auto& c : classes["classes"]) s.stack_ranks += c["count"].get<std::size_t>();
      s.stack_text = classes["text"].get<std::string>();
    }
    if (seen) seen->push_back(std::move(s));
    return w::encode_down(w::Down{});
  };
  return m;
}

}  // namespace scout::sim
