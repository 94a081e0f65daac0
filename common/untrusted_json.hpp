// One reader for JSON that someone else wrote: a service request, a user's
// spool row, a control-socket reply, a peer's message. Size and nesting depth
// are checked by a linear scan before anything is parsed, so no value this
// returns is deeper than the limit (nothing later recurses deeper: dump(),
// copies, the destructor). Typed field readers refuse what is not of the
// expected shape, naming what was expected. Never throws from parse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::common {

struct JsonLimits {
  std::size_t max_bytes = std::size_t{1} << 20;
  int max_depth = 32;  // arrays and objects nested in each other
};

// Nesting depth of `text` (arrays and objects, outside strings), stopping as
// soon as it passes `stop_above`; iterative, O(size).
int json_depth(std::string_view text, int stop_above);

// The parsed value, or nullopt with `why` saying what was expected (too
// large, too deep, not JSON).
std::optional<nlohmann::json> parse_untrusted(std::string_view text, const JsonLimits& limits,
                                              std::string* why = nullptr);

// Limits for the kinds of untrusted text scout reads.
inline constexpr JsonLimits kRequestLimits{std::size_t{1} << 20, 16};   // scout-ledgerd requests
inline constexpr JsonLimits kReplyLimits{std::size_t{64} << 20, 32};    // service and control replies
inline constexpr JsonLimits kEvidenceLimits{64 * 1024, 12};             // a verdict's evidence object
inline constexpr JsonLimits kListLimits{1 << 20, 1};                    // ranks, hosts: flat arrays

// A node (host) name as Slurm writes it: 1-64 of [A-Za-z0-9._-].
bool valid_node_name(std::string_view n);

// Typed readers of a flat array (each returns false, with `why`, on anything
// else): ranks are integers, hosts are node names; at most `max` elements.
bool read_ranks(const nlohmann::json& v, std::vector<std::int64_t>& out, std::size_t max, std::string* why = nullptr);
bool read_hosts(const nlohmann::json& v, std::vector<std::string>& out, std::size_t max, std::string* why = nullptr);
// The same from text (a ledger column a user wrote).
bool read_ranks(const std::string& text, std::vector<std::int64_t>& out, std::size_t max, std::string* why = nullptr);
bool read_hosts(const std::string& text, std::vector<std::string>& out, std::size_t max, std::string* why = nullptr);

// A ledger column a user may have written, parsed within limits, or
// `fallback` when it is not JSON of the expected shape (for display).
nlohmann::json column_or(const std::string& text, const JsonLimits& limits, nlohmann::json fallback);

// What a value is, for an error message, without serialising it.
const char* json_type_name(const nlohmann::json& v);

}  // namespace scout::common
