// One way to store, print and log text that someone else wrote (a request's
// reason, a spool row's field, a checkpoint path): beside untrusted_json.hpp.
// What is stored is valid UTF-8 and cut on a character boundary, so every
// later dump() of it succeeds; what reaches a terminal or a log line has
// its control characters escaped, so no one's text can drive the terminal
// or forge a line. Pure functions: no I/O, never throws on any input bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace scout::common {

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code
// points past U+10FFFF: what nlohmann::json's dump() accepts). When it is
// not, `bad_at` (if given) receives the offset of the first ill-formed byte.
bool valid_utf8(std::string_view s, std::size_t* bad_at = nullptr);

// The longest prefix of `s` of at most `max_bytes` that ends on a character
// boundary: a character is never split (an ill-formed byte counts as one).
std::string utf8_prefix(std::string_view s, std::size_t max_bytes);

// U+FFFD REPLACEMENT CHARACTER, what repair_utf8 puts for what it replaces.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// `s` with each ill-formed sequence (its maximal subpart, as Unicode
// recommends) replaced by U+FFFD; well-formed text comes back unchanged.
std::string repair_utf8(std::string_view s);

// What a service stores of someone else's text: repaired, then cut to
// `max_bytes` on a character boundary.
std::string storable_text(std::string_view s, std::size_t max_bytes);

// For a terminal or a log line: C0 controls (0x00-0x1F), DEL (0x7F), C1
// controls (U+0080-U+009F, bytes C2 80-C2 9F) and every ill-formed byte as
// \xNN; printable UTF-8 ("é") unchanged.
std::string escape_control(std::string_view s);

// escape_control of at most `max_bytes` of `s` (cut on a character
// boundary), with "..." when cut: someone's text inside a message.
std::string printable_text(std::string_view s, std::size_t max_bytes);
// The same between single quotes, for a log line or an error that quotes it.
inline constexpr std::size_t kQuotedBytes = 128;
std::string quoted(std::string_view s, std::size_t max_bytes = kQuotedBytes);

// Every string (and object key) in `j` repaired in place (repair_utf8), so
// j.dump() cannot throw; iterative, so any depth. A repaired key that
// equals another key of its object replaces that member.
void repair_json_strings(nlohmann::json& j);

// j.dump(indent) that replaces ill-formed UTF-8 by U+FFFD instead of
// throwing (type_error 316): for JSON that holds a ledger row's or a
// user's text.
std::string dump_repairing_utf8(const nlohmann::json& j, int indent = -1);

}  // namespace scout::common
