// The scoutd control protocol: a line protocol a person can speak with
// `nc -U` (after NCCL's RAS). The client opens with `HELLO 1`; the server
// answers every request with zero or more lines and then one line `OK` or
// one line `ERROR: <what was expected>`. Commands: HELLO <version>, STATUS,
// VERDICTS, STACKS, TUNE key=value..., REPLAY, SET FORMAT json|text, QUIT. Pure logic here; the socket lives in
// control_server.cpp.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::scoutd {

inline constexpr int kProtocolVersion = 1;
inline constexpr std::size_t kMaxLineBytes = 4096;

struct ControlState {
  bool greeted = false;
  bool json = false;
  long uid = -1;  // the client's, from SO_PEERCRED (the job's owner or root)
};

struct ControlProviders {
  std::function<nlohmann::json()> status;    // object, see daemon.cpp
  std::function<nlohmann::json()> verdicts;  // array of verdict objects
  std::string job, node;
  // Asks for a replay cycle; returns "" or why it cannot. Empty: replay off.
  std::function<std::string()> replay{};
  // Takes the stacks of this node's ranks now. Empty: stacks off.
  std::function<nlohmann::json()> stacks{};
  // scoutctl set: queues key=value changes (checked) for the deciding
  // observer; returns "" or why they are refused. Empty: not tunable.
  std::function<std::string(const std::vector<std::pair<std::string, std::string>>&, long uid)> tune{};
};

struct ControlReply {
  std::string text;  // complete reply, every line '\n'-terminated
  bool close = false;
};

ControlReply handle_control_line(ControlState& st, const std::string& line,
                                 const ControlProviders& p);

// Control characters of untrusted text (a user's evidence, a reason that
// quotes it) as \xNN, so nothing printed can drive the terminal: C0, DEL,
// C1 (C2 80-C2 9F; C2 9B is CSI) and ill-formed UTF-8 bytes
// (common::escape_control). JSON replies (SET FORMAT json) are dumped with
// ill-formed UTF-8 replaced, never thrown on.
std::string escape_text(const std::string& in);

// Text renderings shared with scoutctl.
std::string render_status_text(const nlohmann::json& status);
std::string render_verdicts_text(const nlohmann::json& verdicts);
std::string render_stacks_text(const nlohmann::json& stacks);

}  // namespace scout::scoutd
