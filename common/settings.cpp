// The shared settings (see settings.hpp).
#include "common/settings.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <cstdio>

namespace scout::common {

// Plain C formatting: the SPANK plugin links this without libfmt.
std::string expected_text(const NumericSetting& s) {
  char lo[32], hi[32];
  std::snprintf(lo, sizeof lo, "%g", s.min);
  std::snprintf(hi, sizeof hi, "%g", s.max);
  return std::string(s.unit) + (s.above_min ? " above " : " from ") + lo + (s.above_min ? " and at most " : " to ") + hi;
}

std::optional<double> parse_setting(const NumericSetting& s, const std::string& value, std::string* why) {
  const char* p = value.c_str();
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(p, &end);
  const bool number = !value.empty() && value != "(null)" && end && *end == '\0' && errno == 0 && std::isfinite(d);
  if (!number || d < s.min || d > s.max || (s.above_min && d <= s.min)) {
    if (why) *why = "expected " + expected_text(s);
    return std::nullopt;
  }
  return d;
}

std::optional<bool> parse_switch(const std::string& value) {
  if (value == "on") return true;
  if (value == "off") return false;
  return std::nullopt;
}

const NumericSetting* find_numeric(std::string_view key) {
  for (auto* s : kNumericSettings)
    if (s->key == key) return s;
  return nullptr;
}

const SwitchSetting* find_switch(std::string_view key) {
  for (auto* s : kSwitchSettings)
    if (s->key == key) return s;
  return nullptr;
}

}  // namespace scout::common
