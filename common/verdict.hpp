// The one form of a recorded verdict, and its one JSON codec. The ledger
// reads its rows into it (sql::to_verdict), scout-ledgerd answers with it,
// scoutctl prints it, the epilog and the gate policy decide on it, and the
// deciding scoutd tells its peers about it: all through to_json and
// verdict_from_json below, so every reader sees the same object whichever
// ledger answered. Pure data, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "libc3/verdict_kind.hpp"

namespace scout::common {

struct Verdict {
  std::int64_t id = 0;  // the answering ledger's row id (0: not stored)
  std::string job, step;
  c3::VerdictKind kind = c3::VerdictKind::kHang;
  c3::VerdictStatus status = c3::VerdictStatus::kInconclusive;
  std::vector<std::int64_t> ranks;
  std::vector<std::string> hosts;
  nlohmann::json evidence = nlohmann::json::object();
  std::string detected_at;                  // ISO-8601 UTC
  std::optional<std::string> resolved_at;   // progress resumed
  std::optional<std::string> origin;        // provenance of an imported row
  std::optional<std::string> key;           // the stable key (JSON "vkey"): one row in every ledger
  std::optional<std::string> confirmation;  // root's check: confirmed, unconfirmed

  bool names_host(const std::string& node) const;
  // Every host it names is in `nodes` (a verdict naming none is within any).
  template <class Set>
  bool within(const Set& nodes) const {
    for (auto& h : hosts)
      if (!nodes.count(h)) return false;
    return true;
  }
  // The key root's confirmations are recorded under: the stable key, or
  // '#<id>' for a row written before keys existed.
  std::string confirmation_key() const { return key ? *key : "#" + std::to_string(id); }
};

// Bounds on what a verdict may hold when it comes from someone else.
inline constexpr std::size_t kMaxVerdictRanks = 65536;
inline constexpr std::size_t kMaxVerdictHosts = 100000;
inline constexpr std::size_t kMaxEvidenceBytes = 64 * 1024;

// Every field, always present: absent optionals are null, `vkey` is the key.
nlohmann::json to_json(const Verdict& v);

// Strict: each field present must have its type (ranks integers, hosts node
// names, evidence an object of at most kMaxEvidenceBytes); kind and status
// must be scout's; job, step, kind, status and detected_at are required.
// nullopt with `why` naming the field and what was expected.
std::optional<Verdict> verdict_from_json(const nlohmann::json& j, std::string* why = nullptr);

}  // namespace scout::common
