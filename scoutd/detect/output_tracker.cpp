// Collective-output signature consensus (see output_tracker.hpp).
#include "scoutd/detect/output_tracker.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "libc3/rank_record.hpp"
#include "libc3/verdict_rules.hpp"

namespace scout::scoutd {

using nlohmann::json;

std::vector<VerdictDraft> OutputTracker::update(const std::vector<RankEvidence>& ranks) {
  for (auto& e : ranks) {
    for (auto& o : e.outsigs) {
      auto& g = groups_[{o.comm, o.call}];
      g.by_rank[e.rank] = {o.sig, e.node};
      g.kind = o.kind;
    }
    for (auto& [c, m] : e.comm_members) comm_size_[c] = std::max(comm_size_[c], m.size());
  }
  constexpr std::size_t kMaxGroups = 8192;  // bounded memory: the oldest go first
  while (groups_.size() > kMaxGroups) groups_.erase(groups_.begin());
  std::vector<VerdictDraft> out;
  for (auto it = groups_.begin(); it != groups_.end();) {
    const auto& key = it->first;
    Group& g = it->second;
    // The world communicator publishes no member list: its size is the
    // number of ranks; otherwise the published membership.
    std::size_t size = comm_size_.count(key.first) ? comm_size_[key.first] : ranks.size();
    size = std::max(size, g.by_rank.size());
    if (g.by_rank.size() < size && ++g.age < max_age_) {
      ++it;
      continue;
    }
    std::vector<std::uint64_t> sigs;
    std::vector<int> rank_at;
    for (auto& [r, en] : g.by_rank) {
      sigs.push_back(en.sig);
      rank_at.push_back(r);
    }
    const char* kind = c3::coll_name(static_cast<std::uint32_t>(g.kind));
    // The majority is of the communicator, not of the members that reported.
    const auto res = g.by_rank.size() >= 3 ? c3::exact_consensus(sigs, size) : c3::ExactResult{};
    if (res.outcome == c3::ExactOutcome::kAttributed) {
      for (std::size_t i : res.outliers) {
        const int rank = rank_at[i];
        const auto& en = g.by_rank[rank];
        if (named_.count(rank)) continue;
        named_.insert(rank);
        VerdictDraft d;
        d.kind = c3::VerdictKind::kSdc;
        d.status = c3::VerdictStatus::kAttributed;
        d.ranks = {rank};
        d.hosts = {en.node};
        d.evidence = {{"source", "collective_output"},
                      {"rule", "its collective output differs from a strict majority of the communicator"},
                      {"collective", kind}, {"comm", fmt::format("{:016x}", key.first)}, {"call", key.second},
                      {"signature", fmt::format("{:016x}", en.sig)},
                      {"majority_signature", fmt::format("{:016x}", *res.majority_value)},
                      {"agreeing_ranks", res.majority_count}, {"comm_size", size},
                      {"culprits", json::array({{{"rank", rank}, {"node", en.node}}})}};
        d.key = fmt::format("sdc:output:{}", rank);
        out.push_back(std::move(d));
      }
    } else if (res.outcome == c3::ExactOutcome::kInconclusive && !inconclusive_.count(key.first)) {
      inconclusive_.insert(key.first);
      std::map<std::uint64_t, json> by_sig;
      for (auto& [rank, en] : g.by_rank) {
        auto& rs = by_sig[en.sig];
        if (rs.is_null()) rs = json::array();
        rs.push_back(rank);
      }
      json values = json::array();
      for (auto& [sig, rs] : by_sig) values.push_back({{"signature", fmt::format("{:016x}", sig)}, {"ranks", rs}});
      VerdictDraft d;
      d.kind = c3::VerdictKind::kSdc;
      d.status = c3::VerdictStatus::kInconclusive;
      d.evidence = {{"source", "collective_output"},
                    {"rule", "outputs differ and no value has a strict majority of the communicator"},
                    {"collective", kind}, {"comm", fmt::format("{:016x}", key.first)}, {"call", key.second},
                    {"comm_size", size}, {"values", values}};
      d.key = fmt::format("sdc:output:nomajority:{:016x}", key.first);
      out.push_back(std::move(d));
    }
    it = groups_.erase(it);
  }
  return out;
}

}  // namespace scout::scoutd
