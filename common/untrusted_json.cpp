// The bounded JSON reader (see untrusted_json.hpp).
#include "common/untrusted_json.hpp"

#include <fmt/format.h>

namespace scout::common {

using nlohmann::json;

int json_depth(std::string_view text, int stop_above) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[': case '{':
        if (++depth > deepest && (deepest = depth) > stop_above) return deepest;
        break;
      case ']': case '}':
        if (depth > 0) --depth;
        break;
      default: break;
    }
  }
  return deepest;
}

std::optional<json> parse_untrusted(std::string_view text, const JsonLimits& limits, std::string* why) {
  auto fail = [&](std::string msg) -> std::optional<json> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  if (text.size() > limits.max_bytes)
    return fail(fmt::format("{} bytes of JSON; expected at most {}", text.size(), limits.max_bytes));
  if (json_depth(text, limits.max_depth) > limits.max_depth)
    return fail(fmt::format("JSON nested deeper than {} levels", limits.max_depth));
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return fail("not valid JSON");
  return j;
}

bool valid_node_name(std::string_view n) {
  return !n.empty() && n.size() <= 64 &&
         n.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
             std::string_view::npos;
}

const char* json_type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "binary";
  }
}

bool read_ranks(const json& v, std::vector<std::int64_t>& out, std::size_t max, std::string* why) {
  out.clear();
  if (!v.is_array() || v.size() > max) {
    if (why) *why = fmt::format("ranks: expected an array of at most {} integers, got {}", max, json_type_name(v));
    return false;
  }
  for (auto& r : v) {
    if (!r.is_number_integer() || r.get<std::int64_t>() < 0 || r.get<std::int64_t>() > INT32_MAX) {
      if (why) *why = fmt::format("ranks: expected non-negative integers, got {}", json_type_name(r));
      return false;
    }
    out.push_back(r.get<std::int64_t>());
  }
  return true;
}

bool read_hosts(const json& v, std::vector<std::string>& out, std::size_t max, std::string* why) {
  out.clear();
  if (!v.is_array() || v.size() > max) {
    if (why) *why = fmt::format("hosts: expected an array of at most {} node names, got {}", max, json_type_name(v));
    return false;
  }
  for (auto& h : v) {
    if (!h.is_string() || !valid_node_name(h.get_ref<const std::string&>())) {
      if (why) *why = "hosts: expected node names (1-64 of A-Z a-z 0-9 . _ -)";
      return false;
    }
    out.push_back(h.get<std::string>());
  }
  return true;
}

bool read_ranks(const std::string& text, std::vector<std::int64_t>& out, std::size_t max, std::string* why) {
  auto j = parse_untrusted(text, kListLimits, why);
  return j && read_ranks(*j, out, max, why);
}

bool read_hosts(const std::string& text, std::vector<std::string>& out, std::size_t max, std::string* why) {
  auto j = parse_untrusted(text, kListLimits, why);
  return j && read_hosts(*j, out, max, why);
}

json column_or(const std::string& text, const JsonLimits& limits, json fallback) {
  auto j = parse_untrusted(text, limits);
  if (!j || j->type() != fallback.type()) return fallback;
  return std::move(*j);
}

}  // namespace scout::common
