// Every message scoutds exchange over the companion MPI world, in one place:
// a 12-byte header (magic, protocol version, message kind, payload length)
// and the payload of that kind. Encoders build them; decoders check the
// magic, version, kind and every size (without overflow) and refuse the
// rest: a malformed or wrong-version message is counted and dropped, never
// trusted. Nothing here touches MPI: libc3's TreeRound moves the bytes.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scoutd/beside/anomaly_flag.hpp"
#include "scoutd/beside/replay_coordinator.hpp"
#include "scoutd/detect/stack_classes.hpp"
#include "scoutd/observe/rank_evidence.hpp"
#include "scoutd/observe/rank_watcher.hpp"

namespace scout::scoutd::wire {

using Bytes = std::vector<std::uint8_t>;

inline constexpr std::uint32_t kMagic = 0x57544353;  // "SCTW" little-endian
inline constexpr std::uint8_t kVersion = 4;  // 2: sectioned Gather, typed Down; 3: stacks as a tree; 4: books' digests
inline constexpr std::size_t kHeaderBytes = 12;
inline constexpr std::size_t kMaxPayload = std::size_t{1} << 30;

enum class Kind : std::uint8_t {
  kHello = 1,     // start-up allgather: who observes what (Hello)
  kTriggerUp,     // each period, reduced up the tree (Trigger)
  kDecisionDown,  // the root's decision after a trigger or gather (Down)
  kGatherUp,      // the evidence, section by section, combined up the tree (Gather)
  kLearnUp,       // federated learning contributions (doubles)
  kLearnDown,     // the new global model (doubles)
};
const char* to_string(Kind k) noexcept;

// Counts what the decoders refused, for the log and `scoutctl status`.
struct Stats {
  std::atomic<std::uint64_t> malformed{0};      // bad magic, kind or size
  std::atomic<std::uint64_t> wrong_version{0};  // a peer of another version
};
Stats& stats() noexcept;

Bytes encode(Kind kind, const void* payload, std::size_t n);
// The payload of a message of `kind`, or nullopt (counted in stats(); `why`
// says what was expected). An empty input (a lost or absent contribution)
// is nullopt without being counted.
std::optional<Bytes> decode(const Bytes& msg, Kind kind, std::string* why = nullptr);

// --- Hello: fixed size, strings NUL-terminated inside their arrays --------
struct Hello {
  char node[64];
  std::int32_t first_rank, last_rank, pid, reserved;
};
Bytes encode_hello(const std::string& node, int first, int last, int pid);
std::optional<Hello> decode_hello(const Bytes& msg);

// --- Trigger: the per-period reduction --------------------------------------
struct Trigger {
  double max_stall_s;
  std::uint32_t waiting, attached, finalized, deaths, stop, malformed;
  std::uint64_t min_seq, max_seq;
  double max_compute_s;
  std::uint32_t compute_hist[kComputeBins];
  double max_comm_s;
  std::uint32_t comm_hist[kComputeBins];
  std::uint32_t replay_pending;  // replay reports waiting to be gathered
  std::uint32_t replay_demand;   // someone asked for a replay cycle
  std::uint32_t outsig_pending;  // new collective-output signatures
  std::uint32_t learn_pending;   // telemetry anomaly flags to report
  std::uint32_t learn_scored;    // ranks whose latest telemetry window was scored
  std::uint32_t learn_above;     // ... and was above the threshold
  std::uint32_t book_behind;     // observers whose incident book missed events
  std::uint32_t suspects;        // ranks with direct evidence: stopped/D/zombie for the threshold, or ended
  std::uint32_t p2p_active;      // ranks whose exchanges moved since the last period (messages, or a collective-only CPU rank's collectives)
  std::uint32_t tune_pending;    // observers holding scoutctl set requests
  // The observers' incident books (IncidentBook::Digest: verdicts, resolved,
  // hash), least and greatest: the deciding observer sees at once whether
  // any book differs from its own (it may be the one behind).
  std::uint64_t book_min[3];
  std::uint64_t book_max[3];
};
Bytes encode_trigger(const Trigger& t);
std::optional<Trigger> decode_trigger(const Bytes& msg);
// Combines a child's trigger into the accumulator. A child whose message
// does not decode adds nothing but `malformed`, so the root asks for the
// full evidence instead of reading it as "no trouble".
void combine_triggers(Bytes& acc, const Bytes& child);

// --- JSON messages ----------------------------------------------------------
Bytes encode_json(Kind kind, const nlohmann::json& j);
// The parsed payload, or nullopt when the message or its JSON is malformed.
std::optional<nlohmann::json> decode_json(const Bytes& msg, Kind kind);

// --- Gather: the evidence, one typed section per concern --------------------
// Every observer adds its part; interior members combine each section with
// its own reduce (combine_gathers: the lists are appended, the stacks'
// prefix trees merged and bounded); the deciding observer decodes each entry
// with its type's decoder. An entry that does not decode is counted in
// `refused` and skipped, never guessed at. On the wire: a JSON object with
// one member per section (kGatherSections); unknown sections are dropped.
struct ReplayUp {
  int observer = -1;
  replay::Report report;
};
struct Gather {
  std::vector<RankEvidence> ranks;           // every observed rank (detect/)
  std::vector<ReplayUp> replay;              // finished replay cycles and re-runs
  std::vector<AnomalyFlag> telemetry;        // the learner's anomaly flags
  std::vector<nlohmann::json> gpu_health;    // GPU health findings (GpuHealthWatch)
  std::vector<nlohmann::json> tune;          // scoutctl set requests (round/tune_part.cpp)
  StackTree stacks;                          // the ranks' stacks, merged (detect/stack_classes.hpp)
  std::vector<nlohmann::json> book;          // incident-book events of observers out of step (round/incidents.cpp)
  std::size_t refused = 0;                   // decode only: entries dropped
};
// A section's reduce: the child's section into the accumulator's (both
// present; the child's is a peer's, unchecked).
using SectionReduce = void (*)(nlohmann::json& acc, nlohmann::json&& child);
struct GatherSection {
  const char* name;
  SectionReduce reduce;
};
extern const GatherSection kGatherSections[7];
Bytes encode_gather(const Gather& g);
// nullopt when the message, its JSON or its shape is malformed (counted).
std::optional<Gather> decode_gather(const Bytes& msg);
// Appends the child's sections to the accumulator's. A child that does not
// decode adds nothing (counted in stats()); nothing is parsed into types here.
void combine_gathers(Bytes& acc, const Bytes& child);

// --- Down: the deciding observer's decision, to every observer --------------
struct ReplayRerun {
  int observer = -1;
  long cycle = 0;
  std::string device, recipe;
  int times = 1;
};
struct Down {
  bool stop = false;            // the job is ending: every observer stops
  bool gather = false;          // a gather round follows
  bool learn = false;           // a federated learning round follows
  bool deaths_pending = false;  // gather: deaths not named yet; keep reporting them
  bool books_wanted = false;    // trigger: observers whose book differs send it up in the gather
  bool telemetry_held = false;  // gather: the telemetry flags were not recorded (no consensus): keep them
  nlohmann::json events = nlohmann::json::array();  // incident-book events (decide/)
  std::optional<std::array<std::uint64_t, 3>> book_digest;  // the root's book: verdicts, resolved, hash
  std::optional<nlohmann::json> book;                       // the whole book, for observers behind
  std::optional<double> median_compute_s;                   // gather: for the ranks' scores
  std::optional<long> replay_start;                         // a replay cycle to start
  std::vector<ReplayRerun> replay_rerun;                    // devices to re-run
  std::optional<nlohmann::json> tune;                       // settings in force and the requests applied
};
Bytes encode_down(const Down& d);
// nullopt when the message is malformed or a field has the wrong type
// (counted; `why` names the field and what was expected).
std::optional<Down> decode_down(const Bytes& msg, std::string* why = nullptr);

// --- doubles (federated learning) -------------------------------------------
Bytes encode_doubles(Kind kind, const std::vector<double>& v);
std::optional<std::vector<double>> decode_doubles(const Bytes& msg, Kind kind);
// Learn contributions: appended payloads (each a self-delimiting record).
void concat_doubles(Bytes& acc, const Bytes& child);

}  // namespace scout::scoutd::wire
