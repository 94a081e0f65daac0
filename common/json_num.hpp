// Integers from JSON that a peer, a user's scoutd or a client wrote.
// nlohmann::json converts a floating-point value to an integer type with a
// plain cast, which is undefined behaviour when the value is out of range
// (found by fuzz/fuzz_wire and fuzz/fuzz_control: "6.7e+43 is outside the
// range of int"). Integral fields must therefore be JSON integers.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace scout::common {

// j[key] as T; throws std::invalid_argument when absent or not an integer.
template <class T>
T json_int(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer())
    throw std::invalid_argument(std::string("\"") + key + "\": expected an integer");
  return j[key].get<T>();
}

// j[key] as T, or `fallback` when absent or not an integer.
template <class T>
T json_int_or(const nlohmann::json& j, const char* key, T fallback) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer()) return fallback;
  return j[key].get<T>();
}

// An element of an array as T; throws when it is not an integer.
template <class T>
T json_int_at(const nlohmann::json& j) {
  if (!j.is_number_integer()) throw std::invalid_argument("expected an integer");
  return j.get<T>();
}

}  // namespace scout::common
