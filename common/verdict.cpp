// The verdict's one JSON codec (see verdict.hpp).
#include "common/verdict.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/untrusted_json.hpp"
#include "common/untrusted_text.hpp"

namespace scout::common {

using nlohmann::json;

bool Verdict::names_host(const std::string& node) const {
  return std::find(hosts.begin(), hosts.end(), node) != hosts.end();
}

json to_json(const Verdict& v) {
  auto opt = [](const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); };
  return {{"id", v.id},
          {"job", v.job},
          {"step", v.step},
          {"kind", c3::to_string(v.kind)},
          {"status", c3::to_string(v.status)},
          {"ranks", v.ranks},
          {"hosts", v.hosts},
          {"evidence", v.evidence},
          {"detected_at", v.detected_at},
          {"resolved_at", opt(v.resolved_at)},
          {"origin", opt(v.origin)},
          {"vkey", opt(v.key)},
          {"confirmation", opt(v.confirmation)}};
}

namespace {

bool fail(std::string* why, std::string msg) {
  if (why) *why = std::move(msg);
  return false;
}

// A required string field.
bool text(const json& j, const char* k, std::string& out, std::size_t max, std::string* why) {
  if (!j.contains(k) || !j[k].is_string())
    return fail(why, fmt::format("verdict: expected \"{}\": a string, got {}", k,
                                 j.contains(k) ? json_type_name(j[k]) : "nothing"));
  out = j[k].get<std::string>();
  if (out.size() > max) return fail(why, fmt::format("verdict: \"{}\" longer than {} bytes", k, max));
  return true;
}

// An optional string field: absent or null is none.
bool opt_text(const json& j, const char* k, std::optional<std::string>& out, std::size_t max, std::string* why) {
  if (!j.contains(k) || j[k].is_null()) return true;
  std::string s;
  if (!text(j, k, s, max, why)) return false;
  out = std::move(s);
  return true;
}

}  // namespace

std::optional<Verdict> verdict_from_json(const json& j, std::string* why) {
  if (!j.is_object()) {
    fail(why, fmt::format("verdict: expected an object, got {}", json_type_name(j)));
    return std::nullopt;
  }
  Verdict v;
  std::string kind, status;
  if (j.contains("id") && !j["id"].is_null()) {
    if (!j["id"].is_number_integer()) {
      fail(why, fmt::format("verdict: expected \"id\": an integer, got {}", json_type_name(j["id"])));
      return std::nullopt;
    }
    v.id = j["id"].get<std::int64_t>();
  }
  if (!text(j, "job", v.job, 64, why) || !text(j, "step", v.step, 64, why) || !text(j, "kind", kind, 64, why) ||
      !text(j, "status", status, 64, why) || !text(j, "detected_at", v.detected_at, 64, why) ||
      !opt_text(j, "resolved_at", v.resolved_at, 64, why) || !opt_text(j, "origin", v.origin, 256, why) ||
      !opt_text(j, "vkey", v.key, 128, why) || !opt_text(j, "confirmation", v.confirmation, 32, why))
    return std::nullopt;
  const auto k = c3::verdict_kind_from(kind);
  const auto s = c3::verdict_status_from(status);
  if (!k || !s) {
    // Quoted: the message reaches a reply, a log line and a terminal.
    fail(why, fmt::format("verdict: kind {} status {}; expected one of scout's verdict kinds and statuses",
                          quoted(kind, 40), quoted(status, 40)));
    return std::nullopt;
  }
  v.kind = *k;
  v.status = *s;
  std::string w;
  if (j.contains("ranks") && !read_ranks(j["ranks"], v.ranks, kMaxVerdictRanks, &w)) {
    fail(why, "verdict: \"ranks\": " + w);
    return std::nullopt;
  }
  if (j.contains("hosts") && !read_hosts(j["hosts"], v.hosts, kMaxVerdictHosts, &w)) {
    fail(why, "verdict: \"hosts\": " + w);
    return std::nullopt;
  }
  if (j.contains("evidence") && !j["evidence"].is_null()) {
    if (!j["evidence"].is_object()) {
      fail(why, fmt::format("verdict: expected \"evidence\": an object, got {}", json_type_name(j["evidence"])));
      return std::nullopt;
    }
    // Bounded in depth by whoever parsed j (parse_untrusted); in size here.
    const std::string text = dump_repairing_utf8(j["evidence"]);  // j may be built from a row, not parsed
    if (text.size() > kMaxEvidenceBytes) {
      fail(why, fmt::format("verdict: evidence of {} bytes; expected at most {}", text.size(), kMaxEvidenceBytes));
      return std::nullopt;
    }
    v.evidence = j["evidence"];
  }
  return v;
}

}  // namespace scout::common
