// The direct-evidence stall rule (see progress_rules.hpp).
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


// Direct evidence needs no majority: a process stopped (T), in D state or a
// zombie for the stall threshold, with no progress for as long, is a stall
// of that rank (a 1-rank job, or 2 ranks where the other waits for it).
void add_direct_stalls(const std::vector<const RankEvidence*>& live, const DetectorOptions& opt,
                       std::vector<VerdictDraft>& out) {
  std::set<int> named;
  for (auto& d : out)
    for (int r : d.ranks) named.insert(r);
  std::vector<const RankEvidence*> group;
  for (auto* e : live)
    if (!named.count(e->rank) && is_stalled_state(e->state) && e->state_s >= opt.stall_threshold_s &&
        e->stalled_s >= opt.stall_threshold_s)
      group.push_back(e);
  if (group.empty()) return;
  VerdictDraft d = draft(c3::VerdictKind::kStall, c3::VerdictStatus::kAttributed, group);
  json culprits = json::array();
  for (auto* e : group) {
    json c = rank_brief(*e);
    c["state_s"] = e->state_s;
    culprits.push_back(c);
  }
  std::set<int> culprit_ranks;
  for (auto* e : group) culprit_ranks.insert(e->rank);
  std::vector<std::pair<bool, std::string>> chain;
  std::vector<int> waiting;
  for (auto* e : live) {
    if (!e->p2p_call.empty() || e->in_collective || is_stalled_state(e->state))
      chain.emplace_back(culprit_ranks.count(e->rank) > 0, wait_line(*e));
    if (!e->p2p_call.empty() || e->in_collective) waiting.push_back(e->rank);
  }
  d.evidence = {{"rule", "direct evidence: the process has been stopped, in uninterruptible sleep or a zombie "
                         "for the stall threshold, with no progress"},
                {"culprits", culprits}, {"peers", live.size()},
                {"threshold_s", opt.stall_threshold_s}};
  put_list(d.evidence, "waiting", waiting);
  put_lines(d.evidence, "chain", chain);
  d.key = stall_key(group);
  out.push_back(std::move(d));
}

}  // namespace scout::scoutd::rules
