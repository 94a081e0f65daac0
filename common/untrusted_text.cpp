// Text someone else wrote, stored, printed and logged safely (see
// untrusted_text.hpp).
#include "common/untrusted_text.hpp"

#include <utility>
#include <vector>

#include <fmt/format.h>

namespace scout::common {

namespace {

// The UTF-8 sequence at s[i]: `length` bytes, well-formed or not. An
// ill-formed one is its maximal subpart (a lead byte and the continuation
// bytes that were still possible), at least one byte, so a walk always moves.
struct Sequence {
  std::size_t length;
  bool valid;
};

Sequence sequence_at(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {1, true};
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range (Unicode table 3-7)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;  // not overlong
    if (b0 == 0xED) hi = 0x9F;  // not a surrogate
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;  // not overlong
    if (b0 == 0xF4) hi = 0x8F;  // not past U+10FFFF
  } else {
    return {1, false};  // 80-C1, F5-FF: never a lead byte
  }
  for (std::size_t k = 1; k < need; ++k) {
    if (i + k >= s.size()) return {k, false};
    const auto c = static_cast<unsigned char>(s[i + k]);
    if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return {k, false};
  }
  return {need, true};
}

}  // namespace

bool valid_utf8(std::string_view s, std::size_t* bad_at) {
  for (std::size_t i = 0; i < s.size();) {
    const Sequence q = sequence_at(s, i);
    if (!q.valid) {
      if (bad_at) *bad_at = i;
      return false;
    }
    i += q.length;
  }
  return true;
}

std::string utf8_prefix(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  std::size_t end = 0;
  while (end < s.size()) {
    const Sequence q = sequence_at(s, end);
    if (end + q.length > max_bytes) break;
    end += q.length;
  }
  return std::string(s.substr(0, end));
}

std::string repair_utf8(std::string_view s) {
  if (valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    const Sequence q = sequence_at(s, i);
    if (q.valid) out.append(s.substr(i, q.length));
    else out.append(kReplacementCharacter);
    i += q.length;
  }
  return out;
}

std::string storable_text(std::string_view s, std::size_t max_bytes) {
  return utf8_prefix(repair_utf8(s), max_bytes);
}

std::string escape_control(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto hex = [&](std::size_t i, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i + k]));
  };
  for (std::size_t i = 0; i < s.size();) {
    const Sequence q = sequence_at(s, i);
    const auto b0 = static_cast<unsigned char>(s[i]);
    const bool c0_or_del = q.length == 1 && q.valid && (b0 < 0x20 || b0 == 0x7f);
    // C1 (U+0080-U+009F): a terminal takes C2 9B as CSI, like ESC [.
    const bool c1 = q.valid && q.length == 2 && b0 == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F;
    if (!q.valid || c0_or_del || c1) hex(i, q.length);
    else out.append(s.substr(i, q.length));
    i += q.length;
  }
  return out;
}

std::string printable_text(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return escape_control(s);
  return escape_control(utf8_prefix(s, max_bytes)) + "...";
}

std::string quoted(std::string_view s, std::size_t max_bytes) {
  return "'" + printable_text(s, max_bytes) + "'";
}

void repair_json_strings(nlohmann::json& j) {
  std::vector<nlohmann::json*> todo{&j};
  while (!todo.empty()) {
    nlohmann::json& v = *todo.back();
    todo.pop_back();
    if (v.is_string()) {
      auto& s = v.get_ref<std::string&>();
      if (!valid_utf8(s)) s = repair_utf8(s);
    } else if (v.is_array()) {
      for (auto& x : v) todo.push_back(&x);
    } else if (v.is_object()) {
      std::vector<std::string> bad_keys;
      for (auto it = v.begin(); it != v.end(); ++it)
        if (!valid_utf8(it.key())) bad_keys.push_back(it.key());
      for (auto& k : bad_keys) {
        nlohmann::json member = std::move(v[k]);
        v.erase(k);
        v[repair_utf8(k)] = std::move(member);
      }
      for (auto it = v.begin(); it != v.end(); ++it) todo.push_back(&it.value());
    }
  }
}

std::string dump_repairing_utf8(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace scout::common
