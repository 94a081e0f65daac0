// scoutd peer messages (see peer_messages.hpp).
#include "common/untrusted_json.hpp"
#include "scoutd/wire/peer_messages.hpp"
#include "common/json_num.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include <fmt/format.h>

namespace scout::scoutd::wire {

using nlohmann::json;

const char* to_string(Kind k) noexcept {
  switch (k) {
    case Kind::kHello: return "hello";
    case Kind::kTriggerUp: return "trigger";
    case Kind::kDecisionDown: return "decision";
    case Kind::kGatherUp: return "gather";
    case Kind::kLearnUp: return "learn-up";
    case Kind::kLearnDown: return "learn-down";
  }
  return "?";
}

Stats& stats() noexcept {
  static Stats s;
  return s;
}

Bytes encode(Kind kind, const void* payload, std::size_t n) {
  if (n > kMaxPayload) throw std::length_error(fmt::format("scoutd: wire: {} payload of {} bytes exceeds {}",
                                                           to_string(kind), n, kMaxPayload));
  Bytes b(kHeaderBytes + n);
  const std::uint32_t magic = kMagic, len = static_cast<std::uint32_t>(n);
  std::memcpy(b.data(), &magic, 4);
  b[4] = kVersion;
  b[5] = static_cast<std::uint8_t>(kind);
  b[6] = b[7] = 0;
  std::memcpy(b.data() + 8, &len, 4);
  if (n) std::memcpy(b.data() + kHeaderBytes, payload, n);
  return b;
}

std::optional<Bytes> decode(const Bytes& msg, Kind kind, std::string* why) {
  auto refuse = [&](std::atomic<std::uint64_t>& counter, std::string what) -> std::optional<Bytes> {
    ++counter;
    if (why) *why = std::move(what);
    return std::nullopt;
  };
  if (msg.empty()) return std::nullopt;
  if (msg.size() < kHeaderBytes)
    return refuse(stats().malformed, fmt::format("{} bytes; expected a {}-byte header", msg.size(), kHeaderBytes));
  std::uint32_t magic = 0, len = 0;
  std::memcpy(&magic, msg.data(), 4);
  std::memcpy(&len, msg.data() + 8, 4);
  if (magic != kMagic) return refuse(stats().malformed, fmt::format("magic {:08x}; expected {:08x}", magic, kMagic));
  if (msg[4] != kVersion)
    return refuse(stats().wrong_version, fmt::format("protocol version {}; expected {}", msg[4], kVersion));
  if (msg[5] != static_cast<std::uint8_t>(kind))
    return refuse(stats().malformed, fmt::format("message kind {}; expected {} ({})", msg[5],
                                                 static_cast<int>(kind), to_string(kind)));
  // Compared as sizes, never added: no overflow whatever the peer wrote.
  if (len != msg.size() - kHeaderBytes)
    return refuse(stats().malformed, fmt::format("length field {} but {} payload bytes", len, msg.size() - kHeaderBytes));
  return Bytes(msg.begin() + kHeaderBytes, msg.end());
}

Bytes encode_hello(const std::string& node, int first, int last, int pid) {
  Hello h{};
  std::snprintf(h.node, sizeof h.node, "%s", node.c_str());
  h.first_rank = first;
  h.last_rank = last;
  h.pid = pid;
  return encode(Kind::kHello, &h, sizeof h);
}

std::optional<Hello> decode_hello(const Bytes& msg) {
  auto p = decode(msg, Kind::kHello);
  if (!p) return std::nullopt;
  Hello h{};
  if (p->size() != sizeof h || std::memchr(p->data(), 0, sizeof h.node) == nullptr) {
    ++stats().malformed;
    return std::nullopt;
  }
  std::memcpy(&h, p->data(), sizeof h);
  return h;
}

Bytes encode_trigger(const Trigger& t) { return encode(Kind::kTriggerUp, &t, sizeof t); }

std::optional<Trigger> decode_trigger(const Bytes& msg) {
  auto p = decode(msg, Kind::kTriggerUp);
  if (!p) return std::nullopt;
  if (p->size() != sizeof(Trigger)) {
    ++stats().malformed;
    return std::nullopt;
  }
  Trigger t;
  std::memcpy(&t, p->data(), sizeof t);
  return t;
}

void combine_triggers(Bytes& acc, const Bytes& child) {
  auto a = decode_trigger(acc);
  if (!a) return;  // our own contribution always decodes
  auto c = decode_trigger(child);
  if (!c) {
    if (!child.empty()) a->malformed += 1;
    acc = encode_trigger(*a);
    return;
  }
  a->max_stall_s = std::max(a->max_stall_s, c->max_stall_s);
  a->waiting += c->waiting;
  a->attached += c->attached;
  a->finalized += c->finalized;
  a->deaths += c->deaths;
  a->stop |= c->stop;
  a->malformed += c->malformed;
  a->min_seq = std::min(a->min_seq, c->min_seq);
  a->max_seq = std::max(a->max_seq, c->max_seq);
  a->max_compute_s = std::max(a->max_compute_s, c->max_compute_s);
  a->max_comm_s = std::max(a->max_comm_s, c->max_comm_s);
  for (int b = 0; b < kComputeBins; ++b) {
    a->compute_hist[b] += c->compute_hist[b];
    a->comm_hist[b] += c->comm_hist[b];
  }
  a->replay_pending += c->replay_pending;
  a->replay_demand |= c->replay_demand;
  a->outsig_pending += c->outsig_pending;
  a->learn_pending += c->learn_pending;
  a->learn_scored += c->learn_scored;
  a->learn_above += c->learn_above;
  a->suspects += c->suspects;
  a->p2p_active += c->p2p_active;
  a->tune_pending += c->tune_pending;
  a->book_behind += c->book_behind;
  for (int k = 0; k < 3; ++k) {
    a->book_min[k] = std::min(a->book_min[k], c->book_min[k]);
    a->book_max[k] = std::max(a->book_max[k], c->book_max[k]);
  }
  acc = encode_trigger(*a);
}

Bytes encode_json(Kind kind, const json& j) {
  const std::string s = j.dump();
  return encode(kind, s.data(), s.size());
}

std::optional<json> decode_json(const Bytes& msg, Kind kind) {
  auto p = decode(msg, kind);
  if (!p) return std::nullopt;
  // A peer is another user's process on another node: bounded depth, so
  // nothing that handles the value later recurses without bound.
  auto j = common::parse_untrusted(std::string_view(reinterpret_cast<const char*>(p->data()), p->size()),
                                   {std::size_t{1} << 31, 64});
  if (!j) {
    ++stats().malformed;
    return std::nullopt;
  }
  return j;
}

namespace {

template <class T>
void decode_section(const json& obj, const char* name, std::vector<T>& out, std::size_t& refused) {
  auto it = obj.find(name);
  if (it == obj.end()) return;
  if (!it->is_array()) {
    ++refused;
    return;
  }
  out.reserve(it->size());
  for (auto& x : *it) {
    try {
      out.push_back(x.get<T>());
    } catch (const std::exception&) {
      ++refused;  // a malformed entry from a peer is skipped, never trusted
    }
  }
}

}  // namespace

Bytes encode_gather(const Gather& g) {
  json replay = json::array();
  for (auto& r : g.replay) replay.push_back({{"observer", r.observer}, {"report", r.report}});
  json j = {{"ranks", g.ranks}, {"replay", std::move(replay)}, {"telemetry", g.telemetry},
            {"gpu_health", g.gpu_health}, {"tune", g.tune}};
  if (!g.stacks.empty()) j["stacks"] = g.stacks.to_wire();
  if (!g.book.empty()) j["book"] = g.book;
  return encode_json(Kind::kGatherUp, j);
}

std::optional<Gather> decode_gather(const Bytes& msg) {
  auto j = decode_json(msg, Kind::kGatherUp);
  if (!j) return std::nullopt;
  if (!j->is_object()) {
    ++stats().malformed;
    return std::nullopt;
  }
  Gather g;
  decode_section(*j, "ranks", g.ranks, g.refused);
  decode_section(*j, "telemetry", g.telemetry, g.refused);
  std::vector<json> replay;
  decode_section(*j, "replay", replay, g.refused);
  for (auto& r : replay) {
    try {
      if (!r.is_object() || !r.contains("report")) throw std::invalid_argument("replay entry");
      g.replay.push_back({common::json_int_or(r, "observer", -1), r.at("report").get<replay::Report>()});
    } catch (const std::exception&) {
      ++g.refused;
    }
  }
  std::vector<json> gpu;
  decode_section(*j, "gpu_health", gpu, g.refused);
  for (auto& f : gpu) {
    if (f.is_object()) g.gpu_health.push_back(std::move(f));
    else ++g.refused;
  }
  std::vector<json> tune;
  decode_section(*j, "tune", tune, g.refused);
  for (auto& r : tune) {
    if (r.is_object()) g.tune.push_back(std::move(r));  // checked key by key where applied
    else ++g.refused;
  }
  std::vector<json> book;
  decode_section(*j, "book", book, g.refused);
  for (auto& e : book) {
    if (e.is_object()) g.book.push_back(std::move(e));  // each checked where applied (IncidentBook)
    else ++g.refused;
  }
  if (auto it = j->find("stacks"); it != j->end()) {
    if (auto t = StackTree::from_wire(*it, nullptr)) g.stacks = std::move(*t);
    else ++g.refused;
  }
  return g;
}

namespace {

void append(json& acc, json&& child) {
  if (!acc.is_array()) acc = json::array();
  if (!child.is_array()) return;  // dropped here; the root counts what it cannot read
  for (auto& x : child) acc.push_back(std::move(x));
}

// Two observers' stack trees become one, bounded (StackTree::kMaxBytes). A
// child's tree that does not decode is left out and counted.
void merge_stacks(json& acc, json&& child) {
  auto c = StackTree::from_wire(child, nullptr);
  if (!c) {
    ++stats().malformed;
    return;
  }
  auto a = acc.is_null() ? std::optional<StackTree>(StackTree{}) : StackTree::from_wire(acc, nullptr);
  if (!a) a.emplace();  // ours is the first contribution here; never one we could not read
  a->merge(*c);
  acc = a->to_wire();
}

// Book events from several observers: the same event once (observers out
// of step mostly hold the same verdicts).
void merge_events(json& acc, json&& child) {
  if (!acc.is_array()) acc = json::array();
  if (!child.is_array()) return;
  std::set<std::string> have;
  auto ident = [](const json& e) {
    if (!e.is_object()) return std::string();
    const json& v = e.contains("verdict") && e["verdict"].is_object() ? e["verdict"] : e;
    const json vk = v.value("vkey", json());
    const bool named = vk.is_string() && !vk.get_ref<const std::string&>().empty();
    return e.value("op", json()).dump() + "|" + e.value("key", json()).dump() + "|" +
           (named ? vk.get<std::string>() : "id " + v.value("id", json()).dump());
  };
  for (auto& e : acc) have.insert(ident(e));
  for (auto& e : child)
    if (have.insert(ident(e)).second) acc.push_back(std::move(e));
}

}  // namespace

const GatherSection kGatherSections[7] = {{"ranks", append},      {"replay", append}, {"telemetry", append},
                                          {"gpu_health", append}, {"tune", append},   {"stacks", merge_stacks},
                                          {"book", merge_events}};

void combine_gathers(Bytes& acc, const Bytes& child) {
  auto a = decode_json(acc, Kind::kGatherUp);
  auto c = decode_json(child, Kind::kGatherUp);
  json out = json::object();
  if (a && a->is_object())
    for (auto& s : kGatherSections)
      if (auto it = a->find(s.name); it != a->end()) out[s.name] = std::move(*it);
  if (c && c->is_object()) {
    for (auto& s : kGatherSections) {
      auto it = c->find(s.name);
      if (it != c->end()) s.reduce(out[s.name], std::move(*it));  // a section we lack starts as null
    }
  } else if (c) {
    ++stats().malformed;
  }
  acc = encode_json(Kind::kGatherUp, out);
}

Bytes encode_down(const Down& d) {
  json j = {{"stop", d.stop}, {"gather", d.gather}, {"events", d.events}};
  if (d.learn) j["learn"] = true;
  if (d.deaths_pending) j["deaths_pending"] = true;
  if (d.books_wanted) j["books_wanted"] = true;
  if (d.telemetry_held) j["telemetry_held"] = true;
  if (d.book_digest) j["book_digest"] = *d.book_digest;
  if (d.book) j["book"] = *d.book;
  if (d.median_compute_s) j["median_compute_s"] = *d.median_compute_s;
  if (d.replay_start) j["replay_start"] = *d.replay_start;
  if (d.tune) j["tune"] = *d.tune;
  if (!d.replay_rerun.empty()) {
    json rr = json::array();
    for (auto& r : d.replay_rerun)
      rr.push_back({{"observer", r.observer}, {"cycle", r.cycle}, {"device", r.device}, {"recipe", r.recipe},
                    {"times", r.times}});
    j["replay_rerun"] = std::move(rr);
  }
  return encode_json(Kind::kDecisionDown, j);
}

std::optional<Down> decode_down(const Bytes& msg, std::string* why) {
  auto j = decode_json(msg, Kind::kDecisionDown);
  if (!j) {
    if (why) *why = "a JSON decision message";
    return std::nullopt;
  }
  auto refuse = [&](const std::string& what) -> std::optional<Down> {
    ++stats().malformed;
    if (why) *why = what;
    return std::nullopt;
  };
  if (!j->is_object()) return refuse("a JSON object");
  Down d;
  auto flag = [&](const char* name, bool& out) {
    auto it = j->find(name);
    if (it == j->end()) return true;
    if (!it->is_boolean()) return false;
    out = it->get<bool>();
    return true;
  };
  for (auto [name, out] : {std::pair<const char*, bool*>{"stop", &d.stop}, {"gather", &d.gather},
                           {"learn", &d.learn}, {"deaths_pending", &d.deaths_pending},
                           {"books_wanted", &d.books_wanted}, {"telemetry_held", &d.telemetry_held}})
    if (!flag(name, *out)) return refuse(fmt::format("\"{}\": a boolean", name));
  if (auto it = j->find("events"); it != j->end()) {
    if (!it->is_array()) return refuse("\"events\": an array");
    d.events = std::move(*it);
  }
  if (auto it = j->find("book_digest"); it != j->end()) {
    if (!it->is_array() || it->size() != 3 || !(*it)[0].is_number_unsigned() || !(*it)[1].is_number_unsigned() ||
        !(*it)[2].is_number_unsigned())
      return refuse("\"book_digest\": two unsigned counts and a hash");
    d.book_digest = std::array<std::uint64_t, 3>{(*it)[0].get<std::uint64_t>(), (*it)[1].get<std::uint64_t>(),
                                                 (*it)[2].get<std::uint64_t>()};
  }
  if (auto it = j->find("book"); it != j->end()) {
    if (!it->is_array()) return refuse("\"book\": an array of events");
    d.book = std::move(*it);
  }
  if (auto it = j->find("median_compute_s"); it != j->end()) {
    if (!it->is_number()) return refuse("\"median_compute_s\": a number");
    d.median_compute_s = it->get<double>();
  }
  if (auto it = j->find("replay_start"); it != j->end()) {
    if (!it->is_number_integer()) return refuse("\"replay_start\": an integer cycle");
    d.replay_start = it->get<long>();
  }
  if (auto it = j->find("tune"); it != j->end()) {
    if (!it->is_object()) return refuse("\"tune\": an object (settings and applied)");
    d.tune = std::move(*it);
  }
  if (auto it = j->find("replay_rerun"); it != j->end()) {
    if (!it->is_array()) return refuse("\"replay_rerun\": an array");
    for (auto& r : *it) {
      if (!r.is_object() || !r.value("observer", json()).is_number_integer() ||
          !r.value("cycle", json()).is_number_integer() || !r.value("device", json()).is_string() ||
          !r.value("recipe", json()).is_string() || !r.value("times", json()).is_number_integer())
        return refuse("\"replay_rerun\": objects of observer, cycle, device, recipe and times");
      d.replay_rerun.push_back({common::json_int_or(r, "observer", -1), r["cycle"].get<long>(),
                                r["device"].get<std::string>(), r["recipe"].get<std::string>(),
                                std::clamp(common::json_int_or(r, "times", 1), 1, 100)});
    }
  }
  return d;
}

Bytes encode_doubles(Kind kind, const std::vector<double>& v) {
  return encode(kind, v.data(), v.size() * sizeof(double));
}

std::optional<std::vector<double>> decode_doubles(const Bytes& msg, Kind kind) {
  auto p = decode(msg, kind);
  if (!p) return std::nullopt;
  if (p->size() % sizeof(double) != 0) {
    ++stats().malformed;
    return std::nullopt;
  }
  std::vector<double> v(p->size() / sizeof(double));
  if (!v.empty()) std::memcpy(v.data(), p->data(), p->size());
  return v;
}

void concat_doubles(Bytes& acc, const Bytes& child) {
  auto a = decode_doubles(acc, Kind::kLearnUp);
  auto c = decode_doubles(child, Kind::kLearnUp);
  std::vector<double> out = a ? std::move(*a) : std::vector<double>{};
  if (c) out.insert(out.end(), c->begin(), c->end());
  acc = encode_doubles(Kind::kLearnUp, out);
}

}  // namespace scout::scoutd::wire
