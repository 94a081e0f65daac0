// Which rank is in which call, and where (see call_groups.hpp).
#include "scoutd/detect/call_groups.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "libc3/rank_record.hpp"
#include "scoutd/detect/stack_classes.hpp"

namespace scout::scoutd {

using nlohmann::json;

namespace {

constexpr std::size_t kListRanksPerGroup = 64;

std::string hex(std::uint64_t v) { return fmt::format("{:016x}", v); }

// "rank 3" or "ranks 0-2,5" (at most kListRanksPerGroup listed) or "9 ranks".
std::string who(const json& g) {
  const auto count = g.value("count", std::size_t{0});
  const std::string ranges = g.value("rank_ranges", std::string());
  if (count == 1) return "rank " + ranges;
  if (count <= 8 && !ranges.empty()) return "ranks " + ranges;
  return fmt::format("{} ranks", count);
}

// A class (StackTree::classes()) that lists `rank`: its frames, or null.
const json* class_of(const json& classes, int rank) {
  if (!classes.is_object() || !classes.contains("classes") || !classes["classes"].is_array()) return nullptr;
  for (auto& c : classes["classes"]) {
    if (!c.is_object() || !c.contains("ranks") || !c["ranks"].is_array()) continue;
    for (auto& r : c["ranks"])
      if (r.is_number_integer() && r.get<int>() == rank) return &c;
  }
  return nullptr;
}

// Why `rank`'s stack is missing ("" when it is not listed as untraced).
std::string untraced_reason(const json& classes, int rank) {
  if (!classes.is_object() || !classes.contains("untraced") || !classes["untraced"].is_array()) return {};
  for (auto& u : classes["untraced"]) {
    if (!u.is_object() || !u.contains("ranks") || !u["ranks"].is_array()) continue;
    for (auto& r : u["ranks"])
      if (r.is_number_integer() && r.get<int>() == rank) return u.value("error", std::string("not traced"));
  }
  return {};
}

// "(train.c:62)" of a frame scout-stack gave a call site, else "".
std::string site_suffix(const std::string& frame) {
  const std::string f = frame_function(frame);
  return f.size() < frame.size() ? frame.substr(f.size() + 1) : std::string();
}

}  // namespace

json collective_groups(const std::vector<const RankEvidence*>& ranks, std::string* mismatch) {
  std::map<std::uint64_t, std::vector<const RankEvidence*>> by;
  for (auto* e : ranks) by[e->fingerprint].push_back(e);
  std::vector<std::vector<const RankEvidence*>> groups;
  for (auto& [fp, g] : by) groups.push_back(std::move(g));
  // The most crowded first; of the same size, the one with the lowest rank.
  auto lowest = [](auto& g) {
    int r = g.front()->rank;
    for (auto* e : g) r = std::min(r, e->rank);
    return r;
  };
  std::sort(groups.begin(), groups.end(),
            [&](auto& a, auto& b) { return a.size() != b.size() ? a.size() > b.size() : lowest(a) < lowest(b); });
  std::set<std::uint32_t> kinds;
  std::set<std::uint64_t> comms;
  for (auto& g : groups) {
    kinds.insert(g.front()->kind);
    comms.insert(g.front()->comm_id);
  }
  if (mismatch) {
    const std::string kind = groups.empty() ? "?" : c3::coll_name(groups.front().front()->kind);
    *mismatch = kinds.size() > 1   ? "the ranks call collectives in a different order"
                : comms.size() > 1 ? fmt::format("the ranks call {} on different communicators", kind)
                                   : fmt::format("the ranks call {} with different arguments (root, operation, "
                                                 "datatype or count)", kind);
  }
  json out = json::array();
  for (auto& g : groups) {
    if (out.size() >= kMaxGroups) break;
    std::vector<int> rs;
    for (auto* e : g) rs.push_back(e->rank);
    std::sort(rs.begin(), rs.end());
    std::vector<int> listed(rs.begin(), rs.begin() + static_cast<long>(std::min(rs.size(), kListRanksPerGroup)));
    out.push_back({{"kind", c3::coll_name(g.front()->kind)},
                   {"communicator", hex(g.front()->comm_id)},
                   {"fingerprint", hex(g.front()->fingerprint)},
                   {"ranks", listed},
                   {"count", rs.size()},
                   {"rank_ranges", rank_list(listed) + (rs.size() > listed.size() ? ",..." : "")}});
  }
  return out;
}

void describe_groups(json& evidence, const json& stack_classes) {
  if (!evidence.is_object() || !evidence.contains("groups") || !evidence["groups"].is_array()) return;
  std::string text;
  std::set<std::string> comms;
  for (auto& g : evidence["groups"]) {
    if (!g.is_object() || !g.contains("ranks") || !g["ranks"].is_array() || g["ranks"].empty()) continue;
    comms.insert(g.value("communicator", std::string()));
    // The group's first rank stands for it: its stack's entry into the
    // library names the call, the frame that called it the call site.
    const int first = g["ranks"][0].is_number_integer() ? g["ranks"][0].get<int>() : -1;
    std::string call = g.value("kind", std::string("?")), site;
    if (const json* c = class_of(stack_classes, first)) {
      const json& fr = (*c)["frames"];
      if (fr.is_array() && !fr.empty() && fr[0].is_string() && library_frame(fr[0].get<std::string>())) {
        call = fr[0].get<std::string>();
        if (fr.size() > 1 && fr[1].is_string()) {
          const std::string caller = fr[1].get<std::string>();
          g["caller"] = caller;
          site = site_suffix(caller);
          if (site.empty()) site = "(from " + frame_function(caller) + ")";
          else g["site"] = site.substr(1, site.size() - 2);
        }
      } else {
        g["stack_error"] = "its stack does not pass through MPI or NCCL";
      }
    } else if (std::string why = untraced_reason(stack_classes, first); !why.empty()) {
      g["stack_error"] = why;
    } else {
      g["stack_error"] = "no stack taken";
    }
    g["call"] = call;
    text += (text.empty() ? "" : ", ") + who(g) + " in " + call + (site.empty() ? "" : " " + site);
  }
  if (text.empty()) return;
  if (const auto p = evidence.find("position"); p != evidence.end() && p->is_number_integer() &&
                                                 (p->is_number_unsigned() || p->get<long long>() >= 0))
    text += fmt::format(" at collective {}", p->get<std::uint64_t>());
  if (comms.size() == 1 && !comms.begin()->empty()) text += " of communicator " + *comms.begin();
  const std::string mismatch = evidence.value("mismatch", std::string());
  if (!mismatch.empty()) text += ": " + mismatch;
  if (text.size() > kMaxSummary) text = text.substr(0, kMaxSummary) + " ...";
  evidence["summary"] = text;
}

}  // namespace scout::scoutd
