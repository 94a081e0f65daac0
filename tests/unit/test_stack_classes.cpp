// Stack-trace classes (stack_classes.hpp) and their rendering: ranks with
// the same stack outside the MPI library are one class, whatever the MPI
// library's internals; untraced ranks are listed with the reason; the tree
// prints outermost first.
#include <doctest/doctest.h>

#include <functional>

#include <fmt/format.h>

#include "scoutd/detect/stack_classes.hpp"
#include "scoutd/wire/control_protocol.hpp"

using namespace scout::scoutd;

TEST_CASE("stack classes: cut at the call into MPI, the C runtime dropped") {
  const std::vector<std::string> waiting = {"opal_progress", "ompi_request_default_wait_all", "PMPI_Allreduce",
                                            "MPI_Allreduce", "exchange", "main", "__libc_start_call_main",
                                            "__libc_start_main", "_start", "??"};
  CHECK(cut_stack(waiting) == std::vector<std::string>{"MPI_Allreduce", "exchange", "main"});
  const std::vector<std::string> sleeping = {"clock_nanosleep", "__nanosleep", "compute", "main", "_start"};
  CHECK(cut_stack(sleeping) == std::vector<std::string>{"clock_nanosleep", "__nanosleep", "compute", "main"});
  CHECK(cut_stack({}).empty());
}

// scout-stack appends each frame's call site where the module has line
// tables: the library's entry loses its own (the wrapper's line, the same
// for every caller), the program's frames keep theirs, and the C runtime is
// dropped with or without one.
TEST_CASE("stack classes: call sites stay on the program's frames, not on the library's entry") {
  const std::vector<std::string> waiting = {"opal_progress", "PMPI_Barrier", "MPI_Barrier (probe_coll.cpp:210)",
                                            "exchange (train.c:62)", "main (train.c:90)",
                                            "__libc_start_call_main (libc_start_call_main.h:58)",
                                            "__libc_start_main (libc-start.c:360)", "_start"};
  CHECK(cut_stack(waiting) ==
        std::vector<std::string>{"MPI_Barrier", "exchange (train.c:62)", "main (train.c:90)"});
  CHECK(frame_function("exchange (train.c:62)") == "exchange");
  CHECK(frame_function("operator() (a.cpp:1)") == "operator()");
  CHECK(frame_function("operator()") == "operator()");        // no site
  CHECK(frame_function("f (not a site)") == "f (not a site)");  // no colon: not a site
  CHECK(frame_function("") == "");
  CHECK(library_frame("MPI_Allreduce (x.c:1)"));
  CHECK(library_frame("ncclAllReduce"));
  CHECK_FALSE(library_frame("main (MPI_x.c:3)"));
}

TEST_CASE("stack classes: the largest class first, the odd rank named, the untraced listed") {
  std::vector<RankStack> ranks;
  for (int r = 0; r < 8; ++r) {
    if (r == 4) {
      ranks.push_back({r, {"clock_nanosleep", "__nanosleep", "compute", "main", "_start"}, ""});
    } else if (r == 7) {
      ranks.push_back({r, {}, "cannot attach: Operation not permitted"});
    } else {
      // The library's internals differ from rank to rank (where each polls).
      std::string inner = r % 2 ? "opal_progress" : "mca_btl_vader_component_progress";
      ranks.push_back({r, {inner, "PMPI_Allreduce", "MPI_Allreduce", "exchange", "main", "_start"}, ""});
    }
  }
  const auto j = stack_classes(ranks);
  REQUIRE(j["classes"].size() == 2);
  CHECK(j["classes"][0]["ranks"] == nlohmann::json({0, 1, 2, 3, 5, 6}));
  CHECK(j["classes"][0]["frames"] == nlohmann::json({"MPI_Allreduce", "exchange", "main"}));
  CHECK(j["classes"][1]["ranks"] == nlohmann::json({4}));
  CHECK(j["untraced"][0]["ranks"] == nlohmann::json({7}));
  CHECK(j["text"] == "6 ranks in MPI_Allreduce <- exchange <- main; rank 4 in clock_nanosleep <- __nanosleep "
                     "<- compute <- main; rank 7 not traced: cannot attach: Operation not permitted");
  CHECK(stack_classes({{0, {}, ""}, {1, {}, ""}}).is_null());

  // The tree, outermost first, with the ranks through each frame.
  const std::string text = render_stacks_text({{"job", "5"}, {"node", "2 of 2 answered"}, {"ranks", nlohmann::json::array()},
                                               {"classes", j}});
  CHECK(text.find("main  [7 ranks: 0-6]\n") != std::string::npos);
  CHECK(text.find("  exchange  [6 ranks: 0-3,5-6]\n") != std::string::npos);
  CHECK(text.find("    MPI_Allreduce  [6 ranks: 0-3,5-6]\n") != std::string::npos);
  CHECK(text.find("  compute  [1 rank: 4]\n") != std::string::npos);
  CHECK(text.find("not traced [7]: cannot attach: Operation not permitted\n") != std::string::npos);
}

TEST_CASE("stack classes: a rank's frames are untrusted text; the tree escapes control characters") {
  const auto j = stack_classes({{0, {"evil\x1b[2J", "main"}, ""}});
  const std::string text = render_stacks_text({{"job", "5"}, {"node", "n1"}, {"classes", j}});
  CHECK(text.find('\x1b') == std::string::npos);
}

TEST_CASE("STACKS on the control socket: the tree, or why not") {
  ControlProviders p{[] { return nlohmann::json::object(); }, [] { return nlohmann::json::array(); }, "7", "n1", {}};
  ControlState st;
  handle_control_line(st, "HELLO 1", p);
  CHECK(handle_control_line(st, "STACKS", p).text.rfind("ERROR: stacks are off", 0) == 0);
  p.stacks = [] {
    return nlohmann::json{{"job", "7"}, {"node", "n1"}, {"ranks", {{{"rank", 0}, {"pid", 5}, {"frames", {"MPI_Barrier", "main"}}}}},
                          {"classes", stack_classes({{0, {"MPI_Barrier", "main"}, ""}})}};
  };
  const std::string text = handle_control_line(st, "STACKS", p).text;
  CHECK(text.find("main  [1 rank: 0]\n  MPI_Barrier  [1 rank: 0]\n") != std::string::npos);
  CHECK(text.substr(text.size() - 3) == "OK\n");
  handle_control_line(st, "SET FORMAT json", p);
  const std::string j = handle_control_line(st, "STACKS", p).text;
  CHECK(nlohmann::json::parse(j.substr(0, j.find('\n')))["ranks"][0]["pid"] == 5);
}

// --- the tree merged in the gather (StackTree, common::RankSet) -----------------

TEST_CASE("rank sets: ranges merged exactly, scattered ranks counted past the listed ranges") {
  scout::common::RankSet a, b;
  for (int r : {5, 3, 4, 9, 0}) a.add(r);
  CHECK(a.text() == "0,3-5,9");
  for (int r : {1, 2, 6}) b.add(r);
  a.merge(b);
  CHECK(a.text() == "0-6,9");
  CHECK(a.count() == 8);
  // Even ranks from one subtree: one range each, past the bound only counted.
  scout::common::RankSet even;
  for (int r = 0; r < 4000; r += 2) even.add(r);
  CHECK(even.ranges().size() == scout::common::RankSet::kMaxRanges);
  CHECK(even.count() == 2000);
  CHECK(even.text(2) == "0,2,... (1998 more)");
  std::string why;
  CHECK_FALSE(scout::common::RankSet::from_wire(nlohmann::json::parse("[[3,1]]"), 0, &why));
  CHECK(why.find("sorted, disjoint") != std::string::npos);
  CHECK_FALSE(scout::common::RankSet::from_wire(nlohmann::json::parse("[[0,4],[4,6]]"), 0, &why));
  CHECK_FALSE(scout::common::RankSet::from_wire(nlohmann::json::parse("[[-1,4]]"), 0, &why));
  CHECK_FALSE(scout::common::RankSet::from_wire(nlohmann::json::parse("[[0,\"4\"]]"), 0, &why));
  auto ok = scout::common::RankSet::from_wire(nlohmann::json::parse("[[0,4],[6,6]]"), 10, &why);
  REQUIRE(ok);
  CHECK(ok->count() == 16);
}

namespace {

std::vector<std::string> waiting_stack(int r) {
  return {r % 2 ? "opal_progress" : "mca_btl_vader_component_progress", "PMPI_Allreduce", "MPI_Allreduce",
          "exchange", "train", "main", "_start"};
}

// A job's ranks as observers of `per` ranks each, merged pairwise up a
// binary tree through the wire form, as the gather does.
StackTree merged_in_tree(int ranks, int per, const std::function<RankStack(int)>& stack_of) {
  std::vector<StackTree> level;
  for (int first = 0; first < ranks; first += per) {
    StackTree t;
    for (int r = first; r < std::min(ranks, first + per); ++r) {
      auto s = stack_of(r);
      t.add(s.rank, s.frames, s.error);
    }
    level.push_back(*StackTree::from_wire(t.to_wire(), nullptr));
  }
  while (level.size() > 1) {
    std::vector<StackTree> up;
    for (std::size_t i = 0; i < level.size(); i += 2) {
      StackTree t = level[i];
      if (i + 1 < level.size()) t.merge(*StackTree::from_wire(level[i + 1].to_wire(), nullptr));
      up.push_back(std::move(t));
    }
    level = std::move(up);
  }
  return level.front();
}

}  // namespace

TEST_CASE("stack tree: merged in a tree of observers, the classes are those of all ranks at once") {
  auto stack_of = [](int r) -> RankStack {
    if (r == 13) return {r, {"clock_nanosleep", "__nanosleep", "compute", "train", "main", "_start"}, ""};
    if (r == 21) return {r, {}, "cannot attach: Operation not permitted"};
    return {r, waiting_stack(r), ""};
  };
  std::vector<RankStack> all;
  for (int r = 0; r < 40; ++r) all.push_back(stack_of(r));
  const auto at_once = stack_classes(all);
  const auto tree = merged_in_tree(40, 3, stack_of).classes();
  CHECK(tree == at_once);
  CHECK(tree["classes"][0]["count"] == 38);
  CHECK(tree["classes"][0]["rank_ranges"] == "0-12,14-20,22-39");
  CHECK(tree["classes"][1]["ranks"] == nlohmann::json({13}));
  CHECK(tree["text"] == "38 ranks in MPI_Allreduce <- exchange <- train <- main; rank 13 in clock_nanosleep <- "
                        "__nanosleep <- compute <- train <- ...; rank 21 not traced: cannot attach: Operation not "
                        "permitted");
}

TEST_CASE("stack tree: a whole-job hang of 100,000 ranks is a small tree that names every class") {
  auto stack_of = [](int r) -> RankStack {
    if (r == 77777) return {r, {"clock_nanosleep", "compute", "main"}, ""};
    if (r % 1000 == 999) return {r, {"PMPI_Barrier", "MPI_Barrier", "checkpoint", "main"}, ""};
    return {r, waiting_stack(r), ""};
  };
  const StackTree t = merged_in_tree(100000, 8, stack_of);
  CHECK(t.to_wire().dump().size() < 20000);
  const auto j = t.classes();
  REQUIRE(j["classes"].size() == 3);
  CHECK(j["classes"][0]["count"] == 99899);
  CHECK(j["classes"][1]["count"] == 100);
  CHECK(j["classes"][1]["rank_ranges"].get<std::string>().rfind("999,1999,2999,", 0) == 0);
  CHECK(j["classes"][2]["ranks"] == nlohmann::json({77777}));
  CHECK(j["classes"][0]["ranks"].size() == StackTree::kListRanks);
}

TEST_CASE("stack tree: ranks of all different stacks stay counted, the tree folded to its bound") {
  // A hostile or chaotic job: every rank somewhere else, 30 frames deep.
  auto stack_of = [](int r) -> RankStack {
    if (r % 97 == 0) return {r, {}, fmt::format("cannot attach to pid {}", 1000 + r)};
    std::vector<std::string> f;
    for (int d = 0; d < 30; ++d) f.push_back(fmt::format("f{}_{}_{}", d, r, std::string(100, 'x')));
    f.push_back("main");
    return {r, f, ""};
  };
  const StackTree t = merged_in_tree(5000, 8, stack_of);
  CHECK(t.bytes() <= StackTree::kMaxBytes);
  CHECK(t.to_wire().dump().size() < 1024 * 1024);
  std::size_t counted = 0;
  bool dropped = false;
  const auto all = t.classes();
  for (auto& c : all["classes"]) {
    counted += c["count"].get<std::size_t>();
    dropped = dropped || c.value("frames_dropped", false);
  }
  counted += all.value("ranks_in_dropped_classes", std::size_t{0});  // past the classes a verdict lists
  const auto& untraced = all["untraced"];
  CHECK(untraced.size() == StackTree::kMaxErrors + 1);
  for (auto& u : untraced) counted += u["count"].get<std::size_t>();
  CHECK(counted == 5000);
  CHECK(dropped);
  CHECK(all["classes"][0]["frames"].back() == "main");
}

TEST_CASE("stack tree: a peer's tree is checked before it is merged") {
  std::string why;
  auto bad = [&](const char* text) { return !StackTree::from_wire(nlohmann::json::parse(text), &why); };
  CHECK(bad(R"({"n": [], "u": []})"));
  CHECK(bad(R"({"n": [[-1, "", [], 0, false], [5, "main", [], 0, false]], "u": []})"));
  CHECK(why.find("after its parent") != std::string::npos);
  CHECK(bad(R"({"n": [[-1, "", [], 0, false], [0, "main", [[0,1]], 0, false], [0, "main", [[2,2]], 0, false]], "u": []})"));
  CHECK(why.find("each frame once") != std::string::npos);
  CHECK(bad(R"({"n": [[-1, "", [[4,2]], 0, false]], "u": []})"));
  CHECK(bad(R"({"n": [[-1, "", [], 0, false]], "u": [[7, [], 0]]})"));
  std::string deep = R"({"n": [[-1, "", [], 0, false])";
  for (int d = 0; d < 40; ++d) deep += fmt::format(R"(, [{}, "f", [], 0, false])", d);
  CHECK(bad((deep + R"(], "u": []})").c_str()));
  CHECK(why.find("deep") != std::string::npos);
  CHECK_FALSE(bad(R"({"n": [[-1, "", [], 0, false], [0, "main", [[0,3]], 2, false]], "u": [["gone", [[4,4]], 0]]})"));
}

TEST_CASE("stack tree: a peer cannot overflow a count or repeat a reason; a verdict's classes are bounded") {
  std::string why;
  const auto big = std::to_string(std::size_t{1} << 31);
  CHECK_FALSE(StackTree::from_wire(
      nlohmann::json::parse(R"({"n": [[-1, "", [], 0, false]], "u": [["x", [], )" + big + R"(], ["x", [], )" + big +
                            "]]}"),
      &why));
  CHECK(why.find("each reason once") != std::string::npos);
  // Saturated, not wrapped: two sets of 2^31 unlisted ranks merge to 2^31.
  auto a = scout::common::RankSet::from_wire(nlohmann::json::array(), std::size_t{1} << 31, &why);
  REQUIRE(a);
  a->merge(*a);
  CHECK(a->count() == (std::size_t{1} << 31));
  // 2,000 classes under one long path: the verdict lists the most crowded
  // kMaxClasses and counts the rest; its text is bounded.
  StackTree t;
  std::vector<std::string> outer;
  for (int d = 0; d < 20; ++d) outer.push_back(fmt::format("outer_{}_{}", d, std::string(120, 'y')));
  for (int r = 0; r < 2000; ++r) {
    std::vector<std::string> f{fmt::format("leaf{}", r)};
    f.insert(f.end(), outer.begin(), outer.end());
    t.add(r, f, "");
  }
  t.add(5000, {fmt::format("x{}", std::string(400, 'z')), "main"}, std::string(1000, 'e'));
  const auto j = t.classes();
  CHECK(j["classes"].size() == StackTree::kMaxClasses);
  CHECK(j["classes_dropped"] == 2001 - StackTree::kMaxClasses);
  CHECK(j["text"].get<std::string>().size() <= StackTree::kMaxText + 4);
  CHECK(j.dump().size() < 2 * 1024 * 1024);
  // Frames and reasons taken here are held to what a peer's must satisfy.
  StackTree u;
  u.add(1, {std::string(400, 'z'), "main"}, "");
  u.add(2, {}, std::string(1000, 'e'));
  CHECK(StackTree::from_wire(u.to_wire(), &why));
}

TEST_CASE("stack tree: where one rank is, past the ranks a class lists; untraced with its reason") {
  StackTree t;
  for (int r = 0; r < 300; ++r) t.add(r, {"MPI_Barrier", r == 250 ? "b (x.c:2)" : "a (x.c:1)", "main"}, "");
  t.add(400, {}, "ptrace: Operation not permitted");
  auto w = t.find(250);
  REQUIRE(w);
  CHECK(w->frames == std::vector<std::string>{"MPI_Barrier", "b (x.c:2)", "main"});
  CHECK(t.find(299)->frames[1] == "a (x.c:1)");
  CHECK(t.find(400)->error == "ptrace: Operation not permitted");
  CHECK_FALSE(t.find(401));
}
