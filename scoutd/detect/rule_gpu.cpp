// The GPU rule for NCCL ranks (see progress_rules.hpp).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "libc3/rank_record.hpp"
#include "libc3/verdict_rules.hpp"
#include "scoutd/detect/progress_rules.hpp"
#include "common/proc_info.hpp"

namespace scout::scoutd::rules {

using nlohmann::json;


// The verdict's kind must not depend on which clock reaches the threshold
// first: the waiting hosts' (stalled_s) or the held GPU's (idle_s). While
// the only ranks outside the majority's operation are GPUs that hold it
// issued and unbegun but completed something within the threshold, the
// rule is `pending`: the host rules (wait-for, consensus) do not run that
// round, and gpu_hang is named once the GPU's own clock gets there (a GPU
// that completes work resets it; one that never does reaches it). Bounded:
// past twice the threshold of the waiting hosts, the host rules run.
// GPU ranks (NCCL): the host issues operations and the GPU runs them later,
// so a stopped GPU does not stop its host at once. When a strict majority
// of the ranks is stuck and the GPUs of a strict majority sit inside the
// same operation P (begun, not completed), a rank whose GPU has work issued
// but has not begun P (it completed less than P, and its GPU made no
// progress for the threshold) is the one the others wait for: gpu_hang,
// naming its GPU. Every GPU inside P (divergent fingerprints, or a
// communication hang) and a host that stopped issuing (its issue position
// is behind) are left to the rules below: a GPU rank counts as waiting
// while its GPU is inside an operation.
// A GPU that stopped: it has work issued, is inside no operation, and
// completed nothing for the threshold. (A stopped, D-state or zombie
// process's record is frozen, its GPU part too: that is a stall instead.)
// A GPU that holds work: issued, not inside an operation, the process
// running. It is stopped once it completed nothing for the threshold.
bool gpu_holding(const RankEvidence& e) {
  return !is_stalled_state(e.state) && e.seq > e.gpu.done && e.gpu.started == e.gpu.done;
}
bool gpu_stopped(const RankEvidence& e, const DetectorOptions& opt) {
  return gpu_holding(e) && e.gpu.idle_s >= opt.stall_threshold_s;
}
// The deferral is bounded: once the waiting hosts have been stuck for twice
// the threshold, a GPU whose idle clock keeps being reset (it completes work
// on another communicator) no longer holds the host rules back.
bool may_defer(const std::vector<const RankEvidence*>& waiting, const DetectorOptions& opt) {
  double longest = 0;
  for (auto* e : waiting) longest = std::max(longest, e->stalled_s);
  return longest < 2 * opt.stall_threshold_s;
}

const RankEvidence::Gpu::CommOps* comm_ops_of(const RankEvidence& e, std::uint64_t id) {
  for (auto& c : e.gpu.comms)
    if (c.id == id) return &c;
  return nullptr;
}

// Per communicator (tensor, pipeline and data parallel groups number their
// operations apart): when a strict majority of a communicator's members
// (the ranks that list it) have their GPUs inside its operation k, a member
// whose GPU completed less than k on it and stopped is the one they wait for.
std::vector<VerdictDraft> detect_gpu_per_comm(const std::vector<const RankEvidence*>& gpus, const DetectorOptions& opt,
                                              bool& pending) {
  std::vector<VerdictDraft> out;
  // Each communicator's members, in one pass (tensor-parallel groups of 8
  // at 100,000 ranks are 12,500 communicators).
  std::map<std::uint64_t, std::vector<const RankEvidence*>> by_comm;
  for (auto* e : gpus)
    for (auto& c : e->gpu.comms) {
      auto& v = by_comm[c.id];
      if (v.empty() || v.back() != e) v.push_back(e);
    }
  std::set<std::vector<int>> named;
  for (auto& [id, members] : by_comm) {
    if (members.size() < 2) continue;
    std::map<std::uint64_t, std::vector<const RankEvidence*>> inside;
    for (auto* e : members) {
      auto* c = comm_ops_of(*e, id);
      if (c->begun > c->done) inside[c->done + 1].push_back(e);
    }
    std::uint64_t k = 0;
    std::vector<const RankEvidence*> waiting;
    for (auto& [op, v] : inside)
      if (c3::strict_majority(v.size(), members.size())) k = op, waiting = v;
    if (k == 0) continue;
    std::vector<const RankEvidence*> culprits;
    bool other = false, young = false;
    for (auto* e : members) {
      auto* c = comm_ops_of(*e, id);
      if (c->begun > c->done && c->done + 1 == k) continue;
      // Its host issued k (a host that did not is a host stall or hang).
      if (c->done < k && c->issued >= k && gpu_holding(*e)) {
        culprits.push_back(e);
        young = young || !gpu_stopped(*e, opt);
      } else {
        other = true;
      }
    }
    if (culprits.empty() || other) continue;
    if (young) {  // the GPU's own clock has not reached the threshold yet
      pending = pending || may_defer(waiting, opt);
      continue;
    }
    VerdictDraft d = draft(c3::VerdictKind::kGpuHang, c3::VerdictStatus::kAttributed, culprits);
    if (!named.insert(d.ranks).second) continue;  // the same GPUs through another communicator
    json cj = json::array();
    for (auto* e : culprits) cj.push_back(gpu_brief(*e));
    const RankEvidence* ref = waiting.front();
    const std::uint64_t op = ref->gpu.done + 1;  // the global position, in the reference rank's numbering
    d.evidence = {{"rule", "the GPUs of a strict majority of a communicator's members wait inside its operation k; "
                           "these members' GPUs have not begun it and stopped"},
                  {"communicator", fmt::format("{:016x}", id)},
                  {"communicator_op", k},
                  {"operation", op},
                  {"collective", ref->seq == op ? c3::coll_name(ref->kind) : "unknown"},
                  {"majority_count", waiting.size()},
                  {"members", members.size()},
                  {"peers", gpus.size()},
                  {"culprits", cj}};
    put_list(d.evidence, "waiting", ranks_of(waiting));
    d.key = key_of("gpu_hang", d.ranks, k);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<VerdictDraft> detect_gpu(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt,
                                     bool& pending) {
  pending = false;
  std::vector<VerdictDraft> out;
  std::vector<const RankEvidence*> gpus;
  for (auto* e : live)
    if (e->gpu.present && e->gpu.tracking) gpus.push_back(e);
  if (gpus.size() < 2 || gpus.size() != live.size()) return out;
  std::size_t stuck = 0;
  for (auto* e : gpus) stuck += e->stalled_s >= opt.stall_threshold_s;
  if (!c3::strict_majority(stuck, gpus.size())) return out;
  if (out = detect_gpu_per_comm(gpus, opt, pending); !out.empty() || pending) return out;
  // Without per-communicator tables (more communicators than a record
  // lists): the same rule on the ranks' global positions.
  std::map<std::uint64_t, std::vector<const RankEvidence*>> inside;  // operation -> ranks inside it
  for (auto* e : gpus)
    if (e->gpu.started > e->gpu.done) inside[e->gpu.done + 1].push_back(e);
  std::uint64_t op = 0;
  std::vector<const RankEvidence*> waiting;
  for (auto& [p, v] : inside)
    if (c3::strict_majority(v.size(), gpus.size())) op = p, waiting = v;
  if (op == 0) return out;
  std::vector<const RankEvidence*> culprits, others;
  bool young = false;
  for (auto* e : gpus) {
    if (e->gpu.started > e->gpu.done && e->gpu.done + 1 == op) continue;
    if (e->seq >= op && e->gpu.done < op && gpu_holding(*e)) {
      culprits.push_back(e);
      young = young || !gpu_stopped(*e, opt);
    } else {
      others.push_back(e);
    }
  }
  if (!culprits.empty() && others.empty() && young) {
    pending = may_defer(waiting, opt);  // the GPU's own clock has not reached the threshold yet
    return out;
  }
  const RankEvidence* ref = waiting.front();
  for (auto* e : waiting)
    if (e->seq == op) { ref = e; break; }
  const std::vector<int> waiting_ranks = ranks_of(waiting);
  if (!culprits.empty() && others.empty()) {
    VerdictDraft d = draft(c3::VerdictKind::kGpuHang, c3::VerdictStatus::kAttributed, culprits);
    json cj = json::array();
    for (auto* e : culprits) cj.push_back(gpu_brief(*e));
    d.evidence = {{"rule", "the GPUs of a strict majority wait inside operation P; these GPUs have P issued "
                           "and have not begun it"},
                  {"operation", op},
                  {"collective", ref->seq == op ? c3::coll_name(ref->kind) : "unknown"},
                  {"communicator", fmt::format("{:016x}", ref->seq == op ? ref->comm_id : 0)},
                  {"majority_count", waiting.size()},
                  {"peers", gpus.size()},
                  {"culprits", cj}};
    put_list(d.evidence, "waiting", waiting_ranks);
    d.key = key_of("gpu_hang", d.ranks, op);
    out.push_back(std::move(d));
    return out;
  }
  return out;
}

}  // namespace scout::scoutd::rules
