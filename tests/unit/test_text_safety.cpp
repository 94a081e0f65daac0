// Strings that cannot break anything (issue 34): what scout-ledgerd stores is
// valid UTF-8 cut on a character boundary, every reply it builds can be
// dumped whatever bytes a ledger row holds, and someone's text reaches a
// terminal or a log line with its control characters escaped.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>

#include "common/log.hpp"
#include "common/untrusted_text.hpp"
#include "ledgerd/service.hpp"

using namespace scout::common;
using nlohmann::json;
namespace fs = std::filesystem;
namespace ld = scout::ledgerd;

namespace {

// A service on a temporary site ledger, Slurm played by a map.
struct TextSite {
  fs::path dir;
  std::optional<scout::sql::Ledger> ledger;
  std::map<std::string, ld::JobInfo> jobs;
  std::optional<ld::Service> service;
  TextSite() {
    char tmpl[] = "/tmp/scout-text-safety-XXXXXX";
    dir = mkdtemp(tmpl);
    ledger.emplace(scout::sql::Ledger::open((dir / "site.db").string(), scout::sql::Ledger::Mode::kReadWrite));
    ld::SiteConfig cfg;
    cfg.admins = {"root"};
    service.emplace(cfg, *ledger, [this](const std::string& j) -> std::optional<ld::JobInfo> {
      auto it = jobs.find(j);
      if (it == jobs.end()) return std::nullopt;
      return it->second;
    });
  }
  ~TextSite() { fs::remove_all(dir); }
  json ask(uid_t uid, json req) {
    if (!req.contains("v")) req["v"] = ld::kProtocolVersion;
    return service->handle({uid, uid}, req.dump());
  }
};

// What the real server does with every reply: it must not throw.
void check_dumpable(const json& reply) {
  std::string text;
  CHECK_NOTHROW(text = reply.dump());
  CHECK(valid_utf8(text));
}

std::string times(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// What a log line quoting `text` looks like on stderr (an error: written
// whatever SCOUT_LOG_LEVEL says).
std::string captured_log_line(const std::string& text) {
  char tmpl[] = "/tmp/scout-text-log-XXXXXX";
  const int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(fd, 2);
  scout::log::error("refused: {}", text);
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream in(tmpl);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(tmpl);
  return out;
}

}  // namespace

TEST_CASE("utf8_prefix: never splits a 2-, 3- or 4-byte character, at any cut; the longest such prefix") {
  for (const std::string ch : {"\xC3\xA9" /* é */, "\xE2\x82\xAC" /* € */, "\xF0\x9D\x84\x9E" /* 𝄞 */}) {
    // "a" first, so that characters start at every offset modulo their length.
    const std::string s = "a" + times(ch, 20);
    const std::size_t char_bytes = ch.size();
    for (std::size_t max = 0; max <= s.size() + 1; ++max) {
      CAPTURE(char_bytes);
      CAPTURE(max);
      const std::string p = utf8_prefix(s, max);
      CHECK(p.size() <= max);
      CHECK(s.compare(0, p.size(), p) == 0);
      CHECK(valid_utf8(p));
      CHECK(p.size() + ch.size() > std::min(max, s.size()));  // nothing more would fit
      CHECK_NOTHROW((void)json(p).dump());
    }
  }
  // An ill-formed byte counts as one: the cut makes nothing worse.
  CHECK(utf8_prefix("ab\xFF" "cd", 3) == "ab\xFF");
  CHECK(utf8_prefix("short", 4096) == "short");
  // storable_text: repaired, then cut on a boundary.
  const std::string reason = "x" + times("\xC3\xA9", 2500);  // byte 4096 inside a character
  CHECK(storable_text(reason, 4096) == "x" + times("\xC3\xA9", 2047));
  CHECK(storable_text("a\xFF", 10) == "a\xEF\xBF\xBD");
}

TEST_CASE("valid_utf8 and repair_utf8: ill-formed sequences found and replaced by U+FFFD, the rest kept") {
  CHECK(valid_utf8("plain ascii"));
  CHECK(valid_utf8("\xC3\xA9\xE2\x82\xAC\xF0\x9D\x84\x9E"));
  CHECK(valid_utf8("\xC2\x9B"));  // C1 is well-formed: escaped for terminals, valid for JSON
  std::size_t at = 99;
  CHECK_FALSE(valid_utf8("ok\xFF", &at));
  CHECK(at == 2);
  CHECK_FALSE(valid_utf8("ab\xC3", &at));  // truncated
  CHECK(at == 2);
  for (const char* bad : {"\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\x80",
                          "\xFE", "\xE2\x82"}) {
    const std::string shown = escape_control(bad);
    CAPTURE(shown);
    CHECK_FALSE(valid_utf8(bad));
    CHECK_THROWS_AS((void)json(std::string(bad)).dump(), json::type_error);  // what took the service down
    const std::string fixed = repair_utf8(bad);
    CHECK(valid_utf8(fixed));
    CHECK(fixed.find(kReplacementCharacter) != std::string::npos);
    CHECK_NOTHROW((void)json(fixed).dump());
  }
  CHECK(repair_utf8("a\xFF" "b") == "a\xEF\xBF\xBD" "b");
  CHECK(repair_utf8("a\xE2\x82" "b") == "a\xEF\xBF\xBD" "b");  // one maximal subpart, one replacement
  CHECK(repair_utf8("caf\xC3\xA9") == "caf\xC3\xA9");
  // A reply holding a row's stray bytes, in values and keys, at any depth.
  json j = {{"rows", {{{"reason", "bad \xFF byte"}, {"ok", 1}}}}, {"k\xFE", "v"}};
  CHECK_THROWS_AS((void)j.dump(), json::type_error);
  CHECK(valid_utf8(dump_repairing_utf8(j, 2)));
  repair_json_strings(j);
  CHECK_NOTHROW((void)j.dump());
  CHECK(j["rows"][0]["reason"] == "bad \xEF\xBF\xBD byte");
  CHECK(j["k\xEF\xBF\xBD"] == "v");
  CHECK(j["rows"][0]["ok"] == 1);
}

TEST_CASE("escape_control: C0, DEL, C1 and ill-formed bytes as \\xNN; printable UTF-8 unchanged") {
  CHECK(escape_control("/scratch/ck\x1b]0;owned\x07pt") == "/scratch/ck\\x1b]0;owned\\x07pt");
  CHECK(escape_control("line\nforged") == "line\\x0aforged");
  CHECK(escape_control(std::string_view("a\0b", 3)) == "a\\x00b");
  CHECK(escape_control("del\x7f") == "del\\x7f");
  CHECK(escape_control("\xC2\x9B" "31m") == "\\xc2\\x9b31m");  // C1 CSI
  CHECK(escape_control("\xC2\x80\xC2\x9F") == "\\xc2\\x80\\xc2\\x9f");
  CHECK(escape_control("\xC2\xA0") == "\xC2\xA0");  // U+00A0 is not a control
  CHECK(escape_control("bad\xFF") == "bad\\xff");
  CHECK(escape_control("cut\xE2\x82") == "cut\\xe2\\x82");
  CHECK(escape_control("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9D\x84\x9E /scratch/ckpt-7") ==
        "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9D\x84\x9E /scratch/ckpt-7");
  // Whatever the bytes, what comes out is valid UTF-8 with no control
  // character a terminal would act on.
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  for (int b = 0x80; b < 0xC0; ++b) all += std::string("\xC2") + static_cast<char>(b);
  const std::string out = escape_control(all);
  CHECK(valid_utf8(out));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto c = static_cast<unsigned char>(out[i]);
    CHECK((c >= 0x20 && c != 0x7f));
    if (c == 0xC2 && i + 1 < out.size()) CHECK(static_cast<unsigned char>(out[i + 1]) >= 0xA0);
  }
  // Quoted inside a message: escaped and bounded, never split.
  CHECK(quoted("a\nb") == "'a\\x0ab'");
  CHECK(quoted(std::string(1000, 'x'), 10) == "'" + std::string(10, 'x') + "...'");
  CHECK(quoted(times("\xC3\xA9", 10), 5) == "'\xC3\xA9\xC3\xA9...'");
}

TEST_CASE("log: a quoted text cannot forge a line or drive the terminal that reads the log") {
  const std::string out =
      captured_log_line("job 17\n2026-01-01T00:00:00Z warning scout-ledgerd: forged \x1b[2J\xC2\x9B" "31m");
  REQUIRE_FALSE(out.empty());
  CHECK(out.find('\n') == out.size() - 1);  // one line
  CHECK(out.find('\x1b') == std::string::npos);
  CHECK(out.find("\xC2\x9B") == std::string::npos);
  CHECK(out.find("\\x0a2026") != std::string::npos);
}

TEST_CASE("ledgerd: a clear's reason cut on a character boundary; the node request that shows it answers") {
  TextSite s;
  // 5001 bytes: 'x' and 2-byte characters, so byte 4096 is inside one (a
  // byte cut stored invalid UTF-8, and every `node` reply threw).
  const std::string reason = "x" + times("\xC3\xA9", 2500);
  REQUIRE(s.ask(0, {{"op", "clear"}, {"node", "n3"}, {"reason", reason}})["ok"] == true);
  const json r = s.ask(0, {{"op", "node"}, {"node", "n3"}});
  CHECK(r["ok"] == true);
  check_dumpable(r);
  REQUIRE(r["decisions"].size() == 1);
  const std::string stored = r["decisions"][0]["reason"].get<std::string>();
  CHECK(stored == "x" + times("\xC3\xA9", 2047));  // the longest whole prefix of 4096 bytes, nothing replaced
  CHECK(stored.size() <= ld::kMaxReasonBytes);
  // decided_by and a gating reason of 3-byte characters, cut the same way.
  const std::string by = times("\xE2\x82\xAC", 100), long_reason = "ab" + times("\xE2\x82\xAC", 2000);
  REQUIRE(s.ask(0, {{"op", "gating"}, {"job", "17"}, {"node", "n3"}, {"decision", "drain"},
                    {"reason", long_reason}, {"decided_by", by}})["ok"] == true);
  const json g = s.ask(0, {{"op", "node"}, {"node", "n3"}});
  check_dumpable(g);
  REQUIRE(g["decisions"].size() == 2);
  const json& d = g["decisions"][1];
  CHECK(d["decided_by"] == times("\xE2\x82\xAC", 85));  // 255 bytes: 256 would split the 86th
  CHECK(d["reason"] == "ab" + times("\xE2\x82\xAC", 1364));
  check_dumpable(s.ask(0, {{"op", "nodes"}}));
}

TEST_CASE("ledgerd: a request that is not UTF-8 is refused, naming the field; the refusal can be dumped") {
  TextSite s;
  const std::string payload = std::string(R"({"v":)") + std::to_string(ld::kProtocolVersion) +
                              R"(,"op":"gating","job":"17","node":"n3","decision":"drain","reason":"bad )" + "\xFF" +
                              R"( byte"})";
  const json r = s.service->handle({0, 0}, payload);
  CHECK(r["ok"] == false);
  CHECK(r["refused"] == "malformed");
  const std::string error = r["error"].get<std::string>();
  CAPTURE(error);
  CHECK(error.find("'reason'") != std::string::npos);
  CHECK(error.find("UTF-8") != std::string::npos);
  check_dumpable(r);
  // Nothing was recorded.
  CHECK(s.ask(0, {{"op", "node"}, {"node", "n3"}})["decisions"].empty());
  // Not JSON and not UTF-8 either: the byte is named.
  const json b = s.service->handle({0, 0}, "\xFF\xFE garbage");
  CHECK(b["refused"] == "malformed");
  CHECK(b["error"].get<std::string>().find("byte 0") != std::string::npos);
  check_dumpable(b);
}

TEST_CASE("ledgerd: rows holding 0xFF bytes (a spool row forwarded, an old row) make no reply throw") {
  TextSite s;
  s.ledger->insert_job_if_missing({.job_id = "17", .user = "u\xFF", .uid = 1000, .launcher = "slurm"});
  scout::sql::VerdictRow v;
  v.job_id = "17";
  v.step = "0\xFF";
  v.kind = "stall";
  v.status = "attributed";
  v.ranks = "[4]";
  v.hosts = R"(["n3"])";
  v.detected_at = "2026-12-01T00:00:00.000Z\xFE";
  v.vkey = "17.0.\xFF";
  REQUIRE(s.ledger->import_verdict(v, "spool of n3 \xFF", 1000) == 1);
  // A row of a job whose id no check would let in now: listed by a clear.
  s.ledger->insert_job_if_missing({.job_id = "18\xFF", .user = "u", .uid = 1000, .launcher = "slurm"});
  v.job_id = "18\xFF";
  v.vkey = "18.0.b";
  REQUIRE(s.ledger->import_verdict(v, "spool of n3", 1000) == 1);
  s.ledger->insert_gating({"17", "n3", "drain", "scout: stall \xFF", "epilog \xFE", "", "{}"});
  s.ledger->insert_gating({"17", "n\xFF", "keep", "ok", "epilog", "", "{}"});
  for (const json& req :
       {json{{"op", "node"}, {"node", "n3"}}, json{{"op", "nodes"}}, json{{"op", "query"}, {"job", "17"}}}) {
    const std::string what = req.dump();
    CAPTURE(what);
    const json r = s.ask(0, req);
    CHECK(r["ok"] == true);
    check_dumpable(r);
  }
  const json n = s.ask(0, {{"op", "node"}, {"node", "n3"}});
  REQUIRE(n["open_verdicts"].size() == 2);
  CHECK(n["open_verdicts"][0]["step"] == "0\xEF\xBF\xBD");
  CHECK(n["open_verdicts"][1]["job"] == "18\xEF\xBF\xBD");
  CHECK(n["decisions"][0]["reason"] == "scout: stall \xEF\xBF\xBD");
  // Clearing that node stores its closes list (from the rows) as valid UTF-8.
  const json c = s.ask(0, {{"op", "clear"}, {"node", "n3"}, {"reason", "replaced DIMM"}});
  CHECK(c["ok"] == true);
  check_dumpable(c);
  check_dumpable(s.ask(0, {{"op", "node"}, {"node", "n3"}}));
  const auto stored = s.ledger->node_gating("n3");
  REQUIRE(stored.size() == 2);
  CHECK(stored[1].decision == "clear");
  CHECK(stored[1].reason.find("[closes ") != std::string::npos);
  CHECK(stored[1].reason.find("job 18\xEF\xBF\xBD") != std::string::npos);
  CHECK(valid_utf8(stored[1].reason));
}

TEST_CASE("ledgerd: refusals quote a submitter's text escaped and bounded, never split") {
  TextSite s;
  s.jobs["17"] = {1000, true, {"n1", "n2"}};
  auto verdict = [](const std::string& vkey) {
    return json{{"vkey", vkey}, {"step", "0"}, {"kind", "stall"}, {"status", "attributed"}, {"ranks", {4}},
                {"hosts", {"n9"}}, {"evidence", {{"rule", "behind"}}}, {"detected_at", "2026-12-01T00:00:00.000Z"}};
  };
  // A key that would end the log line and clear root's terminal.
  json r = s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {verdict("17.0\n\x1b[2J\xC2\x9B" "31mforged")}}});
  CHECK(r["refused"] == "not_allocated");
  std::string error = r["error"].get<std::string>();
  CAPTURE(error);
  CHECK(error.find('\n') == std::string::npos);
  CHECK(error.find('\x1b') == std::string::npos);
  CHECK(error.find("\xC2\x9B") == std::string::npos);
  CHECK(error.find("\\x0a\\x1b[2J\\xc2\\x9b31mforged") != std::string::npos);
  // A kind of 2-byte characters: the message quotes 40 bytes of it, cut on
  // a boundary (a byte cut made the refusal itself undumpable).
  json bad = verdict("17.0.o0.9.1");
  bad["hosts"] = {"n1"};
  bad["kind"] = "\x1b" + times("\xC3\xA9", 30);
  r = s.ask(1000, {{"op", "submit"}, {"job", "17"}, {"verdicts", {bad}}});
  CHECK(r["refused"] == "malformed");
  error = r["error"].get<std::string>();
  CHECK(error.find('\x1b') == std::string::npos);
  CHECK(error.find(kReplacementCharacter) == std::string::npos);
  CHECK(error.find("\\x1b" + times("\xC3\xA9", 19) + "...") != std::string::npos);
  check_dumpable(r);
}
