// Stack-trace equivalence classes (see stack_classes.hpp).
#include "scoutd/detect/stack_classes.hpp"

#include <algorithm>
#include <map>

#include "scoutd/observe/rank_evidence.hpp"

#include <fmt/format.h>

namespace scout::scoutd {

using nlohmann::json;

std::string frame_function(const std::string& frame) {
  if (frame.empty() || frame.back() != ')') return frame;
  const auto open = frame.rfind(" (");
  if (open == std::string::npos || frame.find(':', open) == std::string::npos) return frame;
  return frame.substr(0, open);
}

bool library_frame(const std::string& frame) {
  const std::string f = frame_function(frame);
  return f.rfind("MPI_", 0) == 0 || f.rfind("PMPI_", 0) == 0 || f.rfind("nccl", 0) == 0 ||
         f.rfind("pnccl", 0) == 0;
}

namespace {

bool runtime_outer(const std::string& frame) {
  const std::string f = frame_function(frame);
  return f == "??" || f == "_start" || f == "__libc_start_main" || f == "__libc_start_call_main" || f == "__clone" ||
         f == "__clone3" || f == "start_thread";
}

constexpr std::size_t kTextFrames = 4;  // frames of a class in the text line

}  // namespace

std::vector<std::string> cut_stack(const std::vector<std::string>& frames) {
  std::size_t end = frames.size();  // one past the outermost kept
  while (end > 0 && runtime_outer(frames[end - 1])) --end;
  std::size_t begin = 0;
  // The outermost call into the library: scan from the outside in.
  for (std::size_t i = end; i-- > 0;)
    if (library_frame(frames[i])) {
      begin = i;
      // Our own wrapper (MPI_Allreduce) calls PMPI_Allreduce: keep the outer one.
      break;
    }
  std::vector<std::string> cut(frames.begin() + static_cast<long>(begin), frames.begin() + static_cast<long>(end));
  // The library's entry without a call site: its line is the wrapper's
  // (ours, or a debug build of the library), the same for every caller;
  // the caller's frame says where the program called it.
  if (!cut.empty() && library_frame(cut.front())) cut.front() = frame_function(cut.front());
  return cut;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::vector<int> r = ranks;
  std::sort(r.begin(), r.end());
  std::string out;
  for (std::size_t i = 0; i < r.size();) {
    std::size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j > i ? fmt::format("{}-{}", r[i], r[j]) : std::to_string(r[i]);
    i = j + 1;
  }
  return out;
}

json stack_classes(const std::vector<RankStack>& ranks) {
  StackTree t;
  for (auto& e : ranks) t.add(e.rank, e.frames, e.error);
  return t.classes();
}

// --- StackTree ---------------------------------------------------------------

namespace {

constexpr const char* kOtherReasons = "(other reasons)";
constexpr std::size_t kMaxWireNodes = std::size_t{1} << 16;

std::size_t set_bytes(const common::RankSet& s) { return 24 + s.ranges().size() * 20; }

}  // namespace

int StackTree::child(int parent, const std::string& frame) {
  auto& kids = nodes_[static_cast<std::size_t>(parent)].kids;
  if (auto it = kids.find(frame); it != kids.end()) return it->second;
  Node n;
  n.parent = parent;
  n.frame = frame;
  n.depth = nodes_[static_cast<std::size_t>(parent)].depth + 1;
  nodes_.push_back(std::move(n));
  const int id = static_cast<int>(nodes_.size() - 1);
  nodes_[static_cast<std::size_t>(parent)].kids.emplace(frame, id);
  return id;
}

void StackTree::add(int rank, const std::vector<std::string>& frames, const std::string& error) {
  if (!frames.empty()) {
    // Held to what a peer's tree must satisfy (from_wire): at most
    // kMaxStackFrames frames of kMaxFrameChars.
    auto cut = cut_stack(frames);
    if (cut.size() > kMaxStackFrames) cut.resize(kMaxStackFrames);
    int at = 0;
    for (auto it = cut.rbegin(); it != cut.rend(); ++it) at = child(at, it->substr(0, kMaxFrameChars));
    nodes_[static_cast<std::size_t>(at)].ends.add(rank);
  } else if (!error.empty()) {
    const std::string reason = error.substr(0, kMaxReasonChars);
    const bool known = untraced_.count(reason) > 0;
    untraced_[known || untraced_.size() < kMaxErrors ? reason : kOtherReasons].add(rank);
  }
}

void StackTree::bound(std::size_t max_bytes) {
  while (bytes() > max_bytes && nodes_.size() > 1) fold_deepest();
}

bool StackTree::empty() const noexcept {
  if (!untraced_.empty()) return false;
  for (auto& n : nodes_)
    if (!n.ends.empty()) return false;
  return true;
}

std::size_t StackTree::bytes() const noexcept {
  std::size_t b = 0;
  for (auto& n : nodes_) b += n.frame.size() + set_bytes(n.ends);
  for (auto& [err, set] : untraced_) b += err.size() + set_bytes(set);
  return b;
}

std::size_t StackTree::classes_count() const noexcept {
  std::size_t k = 0;
  for (auto& n : nodes_) k += n.ends.empty() ? 0 : 1;
  return k;
}

// The deepest level's ranks move to their parents, which lose those frames.
void StackTree::fold_deepest() {
  int deepest = 0;
  for (auto& n : nodes_) deepest = std::max(deepest, n.depth);
  if (deepest == 0) return;
  for (std::size_t i = nodes_.size(); i-- > 1;) {
    if (nodes_[i].depth != deepest) continue;
    Node& p = nodes_[static_cast<std::size_t>(nodes_[i].parent)];
    p.ends.merge(nodes_[i].ends);
    p.folded = true;
  }
  std::vector<Node> kept;
  std::vector<int> id(nodes_.size(), -1);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].depth == deepest) continue;
    id[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(nodes_[i]));
    kept.back().kids.clear();
  }
  for (std::size_t i = 1; i < kept.size(); ++i) {
    kept[i].parent = id[static_cast<std::size_t>(kept[i].parent)];
    kept[static_cast<std::size_t>(kept[i].parent)].kids.emplace(kept[i].frame, static_cast<int>(i));
  }
  nodes_ = std::move(kept);
}

void StackTree::merge(const StackTree& other, std::size_t max_bytes) {
  std::vector<int> id(other.nodes_.size(), 0);
  for (std::size_t i = 0; i < other.nodes_.size(); ++i) {
    const Node& o = other.nodes_[i];
    id[i] = i == 0 ? 0 : child(id[static_cast<std::size_t>(o.parent)], o.frame);
    Node& mine = nodes_[static_cast<std::size_t>(id[i])];
    mine.ends.merge(o.ends);
    mine.folded = mine.folded || o.folded;
  }
  for (auto& [err, set] : other.untraced_) {
    const bool known = untraced_.count(err) > 0;
    untraced_[known || untraced_.size() < kMaxErrors ? err : kOtherReasons].merge(set);
  }
  bound(max_bytes);
}

json StackTree::to_wire() const {
  json n = json::array(), u = json::array();
  for (auto& x : nodes_) n.push_back({x.parent, x.frame, x.ends.to_wire(), x.ends.unlisted(), x.folded});
  for (auto& [err, set] : untraced_) u.push_back({err, set.to_wire(), set.unlisted()});
  return {{"n", std::move(n)}, {"u", std::move(u)}};
}

std::optional<StackTree> StackTree::from_wire(const json& j, std::string* why) {
  auto refuse = [&](std::string what) -> std::optional<StackTree> {
    if (why) *why = "stacks: " + std::move(what);
    return std::nullopt;
  };
  if (!j.is_object() || !j.contains("n") || !j["n"].is_array() || !j.contains("u") || !j["u"].is_array())
    return refuse("an object of \"n\" (nodes) and \"u\" (untraced) arrays");
  const json& n = j["n"];
  if (n.empty() || n.size() > kMaxWireNodes) return refuse(fmt::format("1 to {} nodes", kMaxWireNodes));
  if (j["u"].size() > kMaxErrors + 1) return refuse(fmt::format("at most {} untraced reasons", kMaxErrors + 1));
  StackTree t;
  std::string sub;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const json& x = n[i];
    if (!x.is_array() || x.size() != 5 || !x[0].is_number_integer() || !x[1].is_string() ||
        !x[3].is_number_unsigned() || !x[4].is_boolean())
      return refuse("nodes as [parent, frame, ranges, unlisted, folded]");
    const long long parent = x[0].get<long long>();
    const std::string frame = x[1].get<std::string>();
    if (i == 0 ? (parent != -1 || !frame.empty()) : (parent < 0 || parent >= static_cast<long long>(t.nodes_.size())))
      return refuse("the root first (parent -1, no frame), every other node after its parent");
    if (frame.size() > kMaxFrameChars) return refuse(fmt::format("frames of at most {} characters", kMaxFrameChars));
    auto ends = common::RankSet::from_wire(x[2], x[3].get<std::size_t>(), &sub);
    if (!ends) return refuse(sub);
    int at = 0;
    if (i > 0) {
      if (t.nodes_[static_cast<std::size_t>(parent)].depth >= static_cast<int>(kMaxStackFrames))
        return refuse(fmt::format("at most {} frames deep", kMaxStackFrames));
      at = t.child(static_cast<int>(parent), frame);
      // Two kids of one name (a peer's): merged, and later nodes' parents
      // keep their wire index, which must therefore be this node's.
      if (at != static_cast<int>(i)) return refuse("each frame once among its parent's children");
    }
    t.nodes_[static_cast<std::size_t>(at)].ends.merge(*ends);
    t.nodes_[static_cast<std::size_t>(at)].folded = x[4].get<bool>();
  }
  for (auto& x : j["u"]) {
    if (!x.is_array() || x.size() != 3 || !x[0].is_string() || !x[2].is_number_unsigned() ||
        x[0].get_ref<const std::string&>().size() > kMaxReasonChars)
      return refuse(fmt::format("untraced reasons as [reason (at most {} characters), ranges, unlisted]",
                                kMaxReasonChars));
    auto set = common::RankSet::from_wire(x[1], x[2].get<std::size_t>(), &sub);
    if (!set) return refuse(sub);
    if (!t.untraced_.emplace(x[0].get<std::string>(), std::move(*set)).second) return refuse("each reason once");
  }
  return t;
}

std::optional<StackTree::Where> StackTree::find(int rank) const {
  for (auto& n : nodes_) {
    if (!n.ends.contains(rank)) continue;
    Where w;
    w.folded = n.folded;
    for (const Node* at = &n; at->parent >= 0; at = &nodes_[static_cast<std::size_t>(at->parent)])
      w.frames.push_back(at->frame);
    return w;
  }
  for (auto& [err, s] : untraced_)
    if (s.contains(rank)) return Where{{}, err, false};
  return std::nullopt;
}

json StackTree::classes() const {
  if (empty()) return nullptr;
  struct Class {
    std::vector<std::string> frames;  // innermost first
    const Node* node;
  };
  std::vector<Class> cs;
  for (auto& n : nodes_) {
    if (n.ends.empty()) continue;
    Class c{{}, &n};
    for (const Node* at = &n; at->parent >= 0; at = &nodes_[static_cast<std::size_t>(at->parent)])
      c.frames.push_back(at->frame);
    cs.push_back(std::move(c));
  }
  std::sort(cs.begin(), cs.end(), [](const Class& a, const Class& b) {
    const auto na = a.node->ends.count(), nb = b.node->ends.count();
    return na != nb ? na > nb : a.frames < b.frames;
  });
  auto who = [](const common::RankSet& s) {
    const auto n = s.count();
    if (s.unlisted() > 0) return fmt::format("{} rank{}", n, n == 1 ? "" : "s");  // a peer listed none
    return n == 1 ? fmt::format("rank {}", s.first(1).front())
           : n <= 4 ? fmt::format("ranks {}", s.text())
                    : fmt::format("{} ranks", n);
  };
  json out = json::array(), us = json::array();
  std::string text;
  // What a verdict carries is bounded too: the most crowded classes, the
  // rest counted.
  const std::size_t listed = std::min(cs.size(), kMaxClasses);
  std::size_t dropped_ranks = 0;
  for (std::size_t i = listed; i < cs.size(); ++i) dropped_ranks += cs[i].node->ends.count();
  cs.resize(listed);
  for (auto& c : cs) {
    const auto& s = c.node->ends;
    json k = {{"ranks", s.first(kListRanks)}, {"count", s.count()}, {"rank_ranges", s.text(kListRanks)},
              {"frames", c.frames}};
    if (c.node->folded) k["frames_dropped"] = true;
    out.push_back(std::move(k));
    std::string path = c.node->folded ? "... <- " : "";
    for (std::size_t i = 0; i < c.frames.size() && i < kTextFrames; ++i) path += (i ? " <- " : "") + c.frames[i];
    if (c.frames.size() > kTextFrames) path += " <- ...";
    if (c.frames.empty()) path = c.node->folded ? "(frames dropped)" : "(no frames)";
    text += (text.empty() ? "" : "; ") + who(s) + " in " + path;
  }
  for (auto& [err, s] : untraced_) {
    us.push_back({{"ranks", s.first(kListRanks)}, {"count", s.count()}, {"error", err}});
    text += (text.empty() ? "" : "; ") + who(s) + " not traced: " + err;
  }
  if (text.size() > kMaxText) text = text.substr(0, kMaxText) + " ...";
  json j = {{"classes", out}, {"untraced", us}, {"text", text}};
  if (dropped_ranks) {
    j["classes_dropped"] = classes_count() - listed;
    j["ranks_in_dropped_classes"] = dropped_ranks;
  }
  return j;
}

}  // namespace scout::scoutd
