// libFuzzer target: scoutd's control protocol. The input is what a client of
// the job's user (or root's scoutctl talking to a planted socket) sends, one
// request per line, through one session state, as the server does.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/untrusted_json.hpp"
#include "scoutd/wire/control_protocol.hpp"

using namespace scout::scoutd;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ControlProviders p = [] {
    ControlProviders q;
    q.status = [] {
      return nlohmann::json{{"job", "1"},
                            {"step", "0"},
                            {"node", "n1"},
                            {"ranks", nlohmann::json::array({{{"rank", 0}, {"attached", true}, {"pid", 1}},
                                                             {{"rank", 1}, {"record_invalid", "x\x1b[2J"}}})}};
    };
    q.verdicts = [] {
      return nlohmann::json::array({{{"kind", "hang"}, {"status", "attributed"}, {"evidence", "{\"a\":1}"}}});
    };
    q.replay = [] { return std::string(); };
    q.job = "1";
    q.node = "n1";
    return q;
  }();
  ControlState st;
  std::string in(reinterpret_cast<const char*>(data), size);
  std::size_t at = 0;
  while (at <= in.size()) {
    std::size_t nl = in.find('\n', at);
    std::string line = in.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    ControlReply r = handle_control_line(st, line, p);
    if (r.text.empty() || r.text.back() != '\n') __builtin_trap();  // every reply is whole lines
    if (r.close || nl == std::string::npos) break;
    at = nl + 1;
  }
  // scoutctl renders what a scoutd answers, read as scoutctl reads it (the
  // bounded reader): a hostile reply, however deep, must not break it.
  std::string why;
  auto parsed = scout::common::parse_untrusted(in, scout::common::kReplyLimits, &why);
  if (!parsed && why.empty()) __builtin_trap();  // a refusal always says why
  if (parsed) {
    const nlohmann::json& j = *parsed;
    try {
      if (j.is_object()) (void)render_status_text(j);
      if (j.is_array()) (void)render_verdicts_text(j);
    } catch (const nlohmann::json::exception&) {
      // A type mismatch is reported by scoutctl as a malformed reply.
    }
  }
  return 0;
}
