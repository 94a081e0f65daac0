// Which rank is in which call, and where (see call_groups.hpp).
#include "scoutd/detect/call_groups.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

// The text cut to at most `n` bytes on a UTF-8 character boundary.
std::string cut_utf8(const std::string& text, std::size_t n) {
  if (text.size() <= n) return text;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return text.substr(0, n);
}

// What a process state letter says of a rank in MPI: "" when it runs.
std::string process_of(const RankEvidence& e) {
  if (e.finalized) return "finalized";
  if (!e.alive) return "exited";
  switch (e.state) {
    case 'T':
    case 't':
      return "stopped";
    case 'D':
      return "in uninterruptible sleep";
    case 'Z':
      return "a zombie";
    default:
      return "";
  }
}

// "(train.c:62)" of a frame scout-stack gave a call site, else "".
std::string site_suffix(const std::string& frame) {
  const std::string f = frame_function(frame);
  return f.size() < frame.size() ? frame.substr(f.size() + 1) : std::string();
}

bool rooted(std::uint32_t kind) {
  switch (kind & 0xff) {
    case c3::kBcast: case c3::kGather: case c3::kGatherv: case c3::kScatter: case c3::kScatterv: case c3::kReduce:
      return true;
    default:
      return false;
  }
}

// What every member must pass alike, as the probe recorded it: the amount
// (count and datatype; bytes where the size is known), the operation and
// the root, where the collective has them.
json args_of(const RankEvidence& e) {
  const bool nccl = e.gpu.present;
  json a = json::object();
  if (e.coll_count >= 0 && e.coll_datatype != 0) {
    a["count"] = e.coll_count;
    a["datatype"] = c3::datatype_name(e.coll_datatype, nccl);
    if (const auto size = c3::datatype_size(e.coll_datatype, nccl))
      a["bytes"] = static_cast<std::uint64_t>(e.coll_count) * size;
  }
  if (e.coll_op != 0) a["op"] = c3::op_name(e.coll_op, nccl);
  if (rooted(e.kind) && e.coll_root >= 0) a["root"] = e.coll_root;
  return a;
}

// The amount every member must pass alike: a reduction's count and
// datatype; the others' bytes (one type signature, many spellings).
std::string amount_of(const json& a) {
  if (!a.contains("count")) return "";
  if (a.contains("op") || !a.contains("bytes"))
    return fmt::format("{} x {}", a["count"].get<std::int64_t>(), a["datatype"].get<std::string>());
  return fmt::format("{} bytes", a["bytes"].get<std::uint64_t>());
}

}  // namespace

json collective_groups(const std::vector<const RankEvidence*>& ranks, std::string* mismatch, std::size_t* dropped) {
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
  // Of the same collective on the same communicator: which arguments differ.
  std::set<std::string> roots, ops, amounts;
  for (auto& g : groups) {
    const json a = args_of(*g.front());
    roots.insert(a.contains("root") ? a["root"].dump() : "");
    ops.insert(a.value("op", std::string()));
    amounts.insert(amount_of(a));
  }
  std::vector<std::string> differ;
  if (roots.size() > 1) differ.push_back("root");
  if (ops.size() > 1) differ.push_back("op");
  if (amounts.size() > 1) differ.push_back("amount");
  const bool same_call = kinds.size() == 1 && comms.size() == 1;
  if (mismatch) {
    const std::string kind = groups.empty() ? "?" : c3::coll_name(groups.front().front()->kind);
    if (kinds.size() > 1) {
      *mismatch = "the ranks call collectives in a different order";
    } else if (comms.size() > 1) {
      *mismatch = fmt::format("the ranks call {} on different communicators", kind);
    } else if (differ.empty()) {
      *mismatch = fmt::format("the ranks call {} with different arguments (root, operation, datatype or count)", kind);
    } else {
      std::vector<std::string> words;
      for (auto& d : differ)
        words.push_back(d == "root" ? "roots"
                        : d == "op" ? "operations"
                        : groups.front().front()->coll_op ? "counts or datatypes"
                                                          : "amounts of data");
      std::string list = words.front();
      for (std::size_t i = 1; i < words.size(); ++i) list += (i + 1 == words.size() ? " and " : ", ") + words[i];
      *mismatch = fmt::format("the ranks call {} with different {}", kind, list);
    }
  }
  json out = json::array();
  if (dropped) *dropped = groups.size() > kMaxGroups ? groups.size() - kMaxGroups : 0;
  for (auto& g : groups) {
    if (out.size() >= kMaxGroups) break;
    std::vector<int> rs;
    for (auto* e : g) rs.push_back(e->rank);
    std::sort(rs.begin(), rs.end());
    std::vector<int> listed(rs.begin(), rs.begin() + static_cast<long>(std::min(rs.size(), kListRanksPerGroup)));
    json j = {{"kind", c3::coll_name(g.front()->kind)},
              {"communicator", hex(g.front()->comm_id)},
              {"fingerprint", hex(g.front()->fingerprint)},
              {"args", args_of(*g.front())},
              {"ranks", listed},
              {"count", rs.size()},
              {"rank_ranges", rank_list(listed) + (rs.size() > listed.size() ? ",..." : "")}};
    // The arguments that differ, said after the call ("with root 1").
    if (same_call && !differ.empty()) {
      const json& a = j["args"];
      std::vector<std::string> said;
      for (auto& d : differ) {
        if (d == "root") said.push_back(a.contains("root") ? "root " + a["root"].dump() : "no root");
        if (d == "op") said.push_back(a.value("op", std::string("no operation")));
        if (d == "amount") said.push_back(amount_of(a).empty() ? "no count" : amount_of(a));
      }
      j["with"] = fmt::format("{}", fmt::join(said, ", "));
    }
    out.push_back(std::move(j));
  }
  return out;
}

json state_groups(const std::vector<RankEvidence>& ranks, std::size_t* dropped) {
  struct Group {
    json facts;
    std::vector<int> ranks;
  };
  std::map<std::string, Group> by;
  for (auto& e : ranks) {
    if (!e.attached) continue;
    std::string key;
    json facts;
    // A rank inside MPI keeps its call whatever its process does (stopped
    // inside MPI_Allreduce is said so); one outside MPI says what it does.
    const std::string process = process_of(e);
    const bool gone = e.finalized || !e.alive;
    if (gone || (!e.in_collective && e.p2p_call.empty())) {
      const std::string what = process.empty() ? "running" : process;
      key = "o|" + what;
      facts = {{"state", "outside"}, {"process", what}};
    } else if (e.in_collective) {
      key = fmt::format("c|{}|{}|{}|{}|{}", e.kind, e.comm_id, e.fingerprint, e.seq, process);
      facts = {{"state", "collective"}, {"kind", c3::coll_name(e.kind)}, {"communicator", hex(e.comm_id)},
               {"fingerprint", hex(e.fingerprint)}, {"args", args_of(e)}, {"position", e.seq}};
    } else {
      const std::uint64_t comm = e.p2p_any_comm ? e.p2p_any_comm : e.p2p_comm;
      std::vector<int> peers(e.p2p_peers.begin(), e.p2p_peers.begin() + static_cast<long>(std::min<std::size_t>(e.p2p_peers.size(), 8)));
      const std::string dirs = e.p2p_dirs.substr(0, peers.size());
      // ... and their tags per peer (record version 10), where known.
      const bool tagged = !dirs.empty() && e.p2p_recv_tags.size() >= peers.size() && e.p2p_send_tags.size() >= peers.size();
      std::vector<std::int32_t> rtags, stags;
      if (tagged) {
        rtags.assign(e.p2p_recv_tags.begin(), e.p2p_recv_tags.begin() + static_cast<long>(peers.size()));
        stags.assign(e.p2p_send_tags.begin(), e.p2p_send_tags.begin() + static_cast<long>(peers.size()));
      }
      key = fmt::format("p|{}|{}|{}|{}|{}|{}|{}|{}", e.p2p_call, comm, fmt::join(peers, ","), e.p2p_tag, process, dirs,
                        fmt::join(rtags, ","), fmt::join(stags, ","));
      facts = {{"state", "p2p"}, {"call", e.p2p_call}, {"peers", peers}, {"communicator", hex(comm)}};
      if (e.p2p_tag >= 0) facts["tag"] = e.p2p_tag;
      // A completion call's requests: which way each peer's go ("r" a
      // receive, "s" a send, "b" both, "?" unknown), as the peers are listed.
      if (!dirs.empty()) facts["dirs"] = dirs;
      // Their tags, as the peers are listed (-2 none that way, -1 several).
      if (tagged) facts["tags"] = {{"recv", rtags}, {"send", stags}};
      if (e.p2p_more || e.p2p_peers.size() > peers.size()) facts["more_peers"] = true;
    }
    if (!gone && !process.empty() && facts["state"] != "outside") facts["process"] = process;
    auto& g = by[key];
    if (g.ranks.empty()) g.facts = std::move(facts);
    g.ranks.push_back(e.rank);
  }
  std::vector<Group*> gs;
  for (auto& [k, g] : by) gs.push_back(&g);
  std::sort(gs.begin(), gs.end(), [](auto* a, auto* b) {
    return a->ranks.size() != b->ranks.size() ? a->ranks.size() > b->ranks.size()
                                              : *std::min_element(a->ranks.begin(), a->ranks.end()) <
                                                    *std::min_element(b->ranks.begin(), b->ranks.end());
  });
  json out = json::array();
  if (dropped) *dropped = gs.size() > kMaxGroups ? gs.size() - kMaxGroups : 0;
  for (auto* g : gs) {
    if (out.size() >= kMaxGroups) break;
    std::sort(g->ranks.begin(), g->ranks.end());
    std::vector<int> listed(g->ranks.begin(),
                            g->ranks.begin() + static_cast<long>(std::min(g->ranks.size(), kListRanksPerGroup)));
    json j = std::move(g->facts);
    j["ranks"] = listed;
    j["count"] = g->ranks.size();
    j["rank_ranges"] = rank_list(listed) + (g->ranks.size() > listed.size() ? ",..." : "");
    out.push_back(std::move(j));
  }
  return out;
}

void describe_groups(json& evidence, const StackTree* stacks, std::uint64_t world) {
  if (!evidence.is_object() || !evidence.contains("groups") || !evidence["groups"].is_array()) return;
  std::string text;
  std::set<std::string> comms;
  bool own_positions = false;  // state groups say their positions themselves
  // Point-to-point tags are said only when groups' known tags differ (a
  // completion call's requests have none in the record).
  std::set<std::string> tags;
  for (auto& g : evidence["groups"])
    if (g.is_object() && g.value("state", std::string()) == "p2p" && g.contains("tag")) tags.insert(g["tag"].dump());
  const bool say_tags = tags.size() > 1;
  for (auto& g : evidence["groups"]) {
    if (!g.is_object() || !g.contains("ranks") || !g["ranks"].is_array() || g["ranks"].empty()) continue;
    comms.insert(g.value("communicator", std::string()));
    // The group's first rank stands for it: its stack's entry into the
    // library names the call, the frame that called it the call site.
    const int first = g["ranks"][0].is_number_integer() ? g["ranks"][0].get<int>() : -1;
    const std::string state = g.value("state", std::string("collective"));
    own_positions |= g.contains("position");
    std::string call = state == "p2p" ? g.value("call", std::string("?")) : g.value("kind", std::string("?")), site;
    if (state == "outside") call = "outside MPI (" + g.value("process", std::string("?")) + ")";
    const auto where = stacks ? stacks->find(first) : std::nullopt;
    if (stacks) {  // listed ranks whose stacks are not in yet (a verdict waits a while for them)
      std::size_t missing = 0;
      for (auto& r : g["ranks"])
        if (r.is_number_integer() && !stacks->find(r.get<int>())) ++missing;
      if (missing) g["stacks_missing"] = missing;
    }
    if (!where) {
      g["stack_error"] = "no stack taken";
    } else if (!where->error.empty()) {
      g["stack_error"] = where->error;
    } else if (state == "outside") {
      // Outside MPI: where the program is (its innermost frame with a call
      // site, else its innermost frame).
      const auto& fr = where->frames;
      std::string at = fr.empty() ? std::string("?") : fr.front();
      for (auto& f : fr)
        if (!site_suffix(f).empty()) {
          at = f;
          break;
        }
      g["caller"] = at;
      if (const std::string sx = site_suffix(at); !sx.empty()) g["site"] = sx.substr(1, sx.size() - 2);
      site = "at " + at;
    } else if (!where->frames.empty() && library_frame(where->frames.front())) {
      call = where->frames.front();
      if (where->frames.size() > 1) {
        const std::string& caller = where->frames[1];
        g["caller"] = caller;
        site = site_suffix(caller);
        if (site.empty()) {
          site = "(from " + frame_function(caller) + ")";
          // What is missing, for the reader: no line tables (built without
          // -g), or no symbols either (stripped: module+offset).
          g["site_missing"] = caller.find("+0x") != std::string::npos
                                  ? "no symbols or line tables for the caller (a stripped binary): its module and offset"
                                  : "no line tables for the caller (built without -g): its function only";
        } else {
          g["site"] = site.substr(1, site.size() - 2);
        }
      }
    } else {
      g["stack_error"] = where->folded ? "its stack's inner frames were dropped (the tree's bound)"
                                       : "its main thread's stack does not pass through MPI or NCCL";
    }
    g["call"] = call;
    if (const auto w = g.find("with"); w != g.end() && w->is_string() && !w->get<std::string>().empty())
      call += " with " + w->get<std::string>();
    std::string phrase = who(g) + (state == "outside" ? " " : " in ") + call + (site.empty() ? "" : " " + site);
    if (state == "p2p" && g.contains("peers") && g["peers"].is_array() && !g["peers"].empty()) {
      std::vector<int> peers;
      bool any = false;
      for (auto& p : g["peers"]) {
        if (!p.is_number_integer()) continue;
        if (p.get<int>() < 0) any = true;
        else peers.push_back(p.get<int>());
      }
      std::string whom = peers.empty() ? "" : (peers.size() == 1 ? "rank " : "ranks ") + rank_list(peers);
      if (any) whom += whom.empty() ? "any source" : " or any source";
      if (g.value("more_peers", false)) whom += " and more";
      phrase += " for " + whom;
      // Several requests: each peer's tags, where the record holds them
      // (version 10), which tag it awaits from each peer and sends to it,
      // what a person reading a wrongly tagged exchange needs; else the
      // call's one tag where the groups' tags differ.
      const auto tg = g.find("tags");
      std::vector<std::string> ways;
      if (tg != g.end() && tg->is_object() && tg->contains("recv") && tg->contains("send")) {
        const json& r = (*tg)["recv"];
        const json& w = (*tg)["send"];
        auto tag_word = [](const json& t) {
          return t.get<std::int64_t>() >= 0 ? fmt::format("tag {}", t.get<std::int64_t>()) : std::string("several tags");
        };
        const auto& ps = g["peers"];
        for (std::size_t k = 0; k < ps.size() && k < r.size() && k < w.size(); ++k) {
          if (!ps[k].is_number_integer() || !r[k].is_number_integer() || !w[k].is_number_integer()) continue;
          const std::string peer = ps[k].get<int>() < 0 ? "any source" : fmt::format("rank {}", ps[k].get<int>());
          if (r[k].get<std::int64_t>() != -2) ways.push_back("receives " + tag_word(r[k]) + " from " + peer);
          if (w[k].get<std::int64_t>() != -2) ways.push_back("sends " + tag_word(w[k]) + " to " + peer);
        }
      }
      if (ways.size() >= 2)  // (one request: its tag, as below)
        phrase += fmt::format(" ({})", fmt::join(ways, ", "));
      else if (const auto t = g.find("tag"); say_tags && t != g.end() && t->is_number_integer())
        phrase += fmt::format(" with tag {}", t->get<std::int64_t>());
    }
    if (g.contains("position") && g["position"].is_number_integer())
      phrase += fmt::format(" at collective {}", g["position"].get<std::uint64_t>());
    if (state != "outside" && g.contains("process") && g["process"].is_string())
      phrase += ", " + g["process"].get<std::string>();
    text += (text.empty() ? "" : ", ") + phrase;
  }
  if (text.empty()) return;
  if (const auto more = evidence.find("groups_dropped"); more != evidence.end() && more->is_number_unsigned())
    text += fmt::format(", and {} more group{}", more->get<std::size_t>(), more->get<std::size_t>() == 1 ? "" : "s");
  // A divergence's groups are at one position (of one communicator, or the
  // mismatch says they are not): said once, after them.
  if (const auto p = evidence.find("position");
      !own_positions && p != evidence.end() && p->is_number_integer() &&
      (p->is_number_unsigned() || p->get<long long>() >= 0)) {
    text += fmt::format(" at collective {}", p->get<std::uint64_t>());
    if (comms.size() == 1 && !comms.begin()->empty())
      text += world && *comms.begin() == hex(world) ? " of MPI_COMM_WORLD" : " of communicator " + *comms.begin();
  }
  const std::string mismatch =
      evidence.contains("mismatch") && evidence["mismatch"].is_string() ? evidence["mismatch"].get<std::string>() : "";
  if (!mismatch.empty()) text += ": " + mismatch;
  // Ranks that went on past that position (a rooted collective's root).
  if (const auto w = evidence.find("went_on"); w != evidence.end() && w->is_array() && !w->empty()) {
    std::vector<int> on;
    for (auto& r : *w)
      if (r.is_number_integer()) on.push_back(r.get<int>());
    const auto n = evidence.value("went_on_count", on.size());
    if (!on.empty())
      text += fmt::format("; {} went on past it",
                          n == 1 ? "rank " + rank_list(on)
                          : n <= 8 && n == on.size() ? "ranks " + rank_list(on)
                                                     : fmt::format("{} ranks", n));
  }
  if (text.size() > kMaxSummary) text = cut_utf8(text, kMaxSummary) + " ...";
  evidence["summary"] = text;
}

}  // namespace scout::scoutd
