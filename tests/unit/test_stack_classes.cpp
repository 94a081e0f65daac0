// Stack-trace classes (stack_classes.hpp) and their rendering: ranks with
// the same stack outside the MPI library are one class, whatever the MPI
// library's internals; untraced ranks are listed with the reason; the tree
// prints outermost first.
#include <doctest/doctest.h>

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
