// Control protocol: handshake, formats, errors for garbage and huge lines.
#include <doctest/doctest.h>

#include "scoutd/wire/control_protocol.hpp"

using namespace scout::scoutd;

namespace {
ControlProviders providers() {
  return {[] { return nlohmann::json{{"job", "7"}, {"node", "n1"}, {"ranks", nlohmann::json::array()}}; },
          [] { return nlohmann::json::array({{{"id", 1}, {"kind", "stall"}, {"status", "attributed"},
                                              {"ranks", {5}}, {"hosts", {"n3"}}, {"resolved_at", nullptr},
                                              {"detected_at", "t"}, {"evidence", {{"rule", "r"}}}}}); },
          "7", "n1"};
}
}  // namespace

TEST_CASE("commands before HELLO are refused with what was expected") {
  ControlState st;
  auto r = handle_control_line(st, "STATUS", providers());
  CHECK(r.text.rfind("ERROR: expected 'HELLO 1' first", 0) == 0);
}

TEST_CASE("version mismatch closes the connection") {
  ControlState st;
  auto r = handle_control_line(st, "HELLO 2", providers());
  CHECK(r.text.find("unsupported protocol version") != std::string::npos);
  CHECK(r.close);
}

TEST_CASE("HELLO, STATUS, SET FORMAT json, VERDICTS") {
  ControlState st;
  auto h = handle_control_line(st, "HELLO 1", providers());
  CHECK(h.text == "SCOUTD 1 job 7 node n1\nOK\n");
  auto s = handle_control_line(st, "STATUS", providers());
  CHECK(s.text.find("job 7 step ? | scoutd n1") != std::string::npos);
  CHECK(s.text.substr(s.text.size() - 3) == "OK\n");
  CHECK(handle_control_line(st, "SET FORMAT json", providers()).text == "OK\n");
  auto v = handle_control_line(st, "VERDICTS", providers());
  auto line = v.text.substr(0, v.text.find('\n'));
  auto j = nlohmann::json::parse(line);
  CHECK(j[0]["kind"] == "stall");
  CHECK(handle_control_line(st, "SET FORMAT yaml", providers()).text.find("expected json or text") != std::string::npos);
  CHECK(handle_control_line(st, "QUIT", providers()).close);
}

TEST_CASE("garbage and oversized lines get errors, never a crash") {
  ControlState st;
  handle_control_line(st, "HELLO 1", providers());
  auto g = handle_control_line(st, std::string("\x01\x02\xff garbage", 11), providers());
  CHECK(g.text.rfind("ERROR: unknown command", 0) == 0);
  CHECK_FALSE(g.close);
  auto big = handle_control_line(st, std::string(1 << 20, 'A'), providers());
  CHECK(big.text.find("line too long") != std::string::npos);
  CHECK(big.close);
  CHECK(handle_control_line(st, "", providers()).text.rfind("ERROR:", 0) == 0);
}

TEST_CASE("REPLAY asks for a cycle, or says why it cannot") {
  ControlState st;
  auto p = providers();
  handle_control_line(st, "HELLO 1", p);
  CHECK(handle_control_line(st, "REPLAY", p).text == "ERROR: replay is off for this job (scoutd --replay off)\n");
  int asked = 0;
  p.replay = [&] { ++asked; return std::string(); };
  CHECK(handle_control_line(st, "replay", p).text == "replay cycle requested\nOK\n");
  CHECK(asked == 1);
  CHECK(handle_control_line(st, "REPLAY now", p).text.rfind("ERROR: unknown command", 0) == 0);
}

TEST_CASE("verdict rendering: evidence that is not an object, odd types and control characters") {
  nlohmann::json v = nlohmann::json::array(
      {{{"id", 1}, {"kind", "stall"}, {"status", "attributed"}, {"ranks", 4}, {"hosts", {"n3\x1b[2J"}},
        {"evidence", "[not an object]"}, {"detected_at", 5}, {"resolved_at", nullptr}},
       {{"id", "x"}, {"kind", 7}, {"evidence", {{"rule", 12}, {"culprits", "none"}, {"source", "replay"}}}},
       "garbage"});
  std::string text;
  CHECK_NOTHROW(text = scout::scoutd::render_verdicts_text(v));
  CHECK(text.find("[not an object]") != std::string::npos);
  CHECK(text.find("n3\\x1b[2J") != std::string::npos);  // escaped, not sent to the terminal
  CHECK(text.find('\x1b') == std::string::npos);
}

TEST_CASE("verdict rendering: the evidence's sentence on a line of its own, escaped") {
  nlohmann::json v = nlohmann::json::array(
      {{{"id", 1}, {"kind", "divergence"}, {"status", "inconclusive"}, {"ranks", nlohmann::json::array()},
        {"hosts", nlohmann::json::array()}, {"detected_at", "t"},
        {"evidence", {{"rule", "same position, no strict majority of collective fingerprints"},
                      {"summary", "rank 0 in MPI_Allreduce (t.c:62), rank 1 in MPI_Barrier (\x1b[2J.c:7)"}}}},
       {{"id", 2}, {"kind", "hang"}, {"evidence", {{"rule", "r"}, {"summary", 5}}}}});
  const std::string text = scout::scoutd::render_verdicts_text(v);
  CHECK(text.find("\n     rank 0 in MPI_Allreduce (t.c:62), rank 1 in MPI_Barrier (\\x1b[2J.c:7)\n") !=
        std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find("     5\n") == std::string::npos);  // a summary that is not text is not printed
}
