// Stack-trace equivalence classes (see stack_classes.hpp).
#include "scoutd/detect/stack_classes.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace scout::scoutd {

using nlohmann::json;

namespace {

bool runtime_outer(const std::string& f) {
  return f == "??" || f == "_start" || f == "__libc_start_main" || f == "__libc_start_call_main" || f == "__clone" ||
         f == "__clone3" || f == "start_thread";
}

bool library_entry(const std::string& f) {
  return f.rfind("MPI_", 0) == 0 || f.rfind("PMPI_", 0) == 0 || f.rfind("nccl", 0) == 0 ||
         f.rfind("pnccl", 0) == 0;
}

constexpr std::size_t kTextFrames = 4;  // frames of a class in the text line

}  // namespace

std::vector<std::string> cut_stack(const std::vector<std::string>& frames) {
  std::size_t end = frames.size();  // one past the outermost kept
  while (end > 0 && runtime_outer(frames[end - 1])) --end;
  std::size_t begin = 0;
  // The outermost call into the library: scan from the outside in.
  for (std::size_t i = end; i-- > 0;)
    if (library_entry(frames[i])) {
      begin = i;
      // Our own wrapper (MPI_Allreduce) calls PMPI_Allreduce: keep the outer one.
      break;
    }
  return {frames.begin() + static_cast<long>(begin), frames.begin() + static_cast<long>(end)};
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
  std::map<std::vector<std::string>, std::vector<int>> classes;
  std::map<std::string, std::vector<int>> untraced;
  for (auto& e : ranks) {
    if (!e.frames.empty()) classes[cut_stack(e.frames)].push_back(e.rank);
    else if (!e.error.empty()) untraced[e.error].push_back(e.rank);
  }
  if (classes.empty() && untraced.empty()) return nullptr;
  std::vector<std::pair<std::vector<std::string>, std::vector<int>>> sorted(classes.begin(), classes.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](auto& a, auto& b) { return a.second.size() > b.second.size(); });
  json cs = json::array(), us = json::array();
  std::string text;
  auto who = [](const std::vector<int>& r) {
    return r.size() == 1 ? fmt::format("rank {}", r[0])
           : r.size() <= 4 ? fmt::format("ranks {}", rank_list(r))
                           : fmt::format("{} ranks", r.size());
  };
  for (auto& [frames, rs] : sorted) {
    cs.push_back({{"ranks", rs}, {"frames", frames}});
    std::string path;
    for (std::size_t i = 0; i < frames.size() && i < kTextFrames; ++i) path += (i ? " <- " : "") + frames[i];
    if (frames.size() > kTextFrames) path += " <- ...";
    if (frames.empty()) path = "(no frames)";
    text += (text.empty() ? "" : "; ") + who(rs) + " in " + path;
  }
  for (auto& [err, rs] : untraced) {
    us.push_back({{"ranks", rs}, {"error", err}});
    text += (text.empty() ? "" : "; ") + who(rs) + " not traced: " + err;
  }
  return {{"classes", cs}, {"untraced", us}, {"text", text}};
}

}  // namespace scout::scoutd
