// The incident book (see incident_book.hpp).
#include "scoutd/decide/incident_book.hpp"

namespace scout::scoutd {

using nlohmann::json;

namespace {

std::string ident_of(const json& v) {
  if (v.contains("vkey") && v["vkey"].is_string() && !v["vkey"].get_ref<const std::string&>().empty())
    return v["vkey"].get<std::string>();
  const json id = v.contains("id") ? v["id"] : json();
  return "id:" + (id.is_number_integer() ? std::to_string(id.get<std::int64_t>()) : std::string("?"));
}

// A string member, or "" when absent or of another type (a peer's bytes).
std::string text_of(const json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::uint64_t fnv(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

void IncidentBook::apply(const json& events) {
  if (!events.is_array()) return;
  for (auto& e : events) {
    if (!e.is_object() || !e.contains("op") || !e["op"].is_string() || !e.contains("key") ||
        !e["key"].is_string()) {
      ++malformed_;
      continue;
    }
    const std::string op = e["op"].get<std::string>(), key = e["key"].get<std::string>();
    if (op == "new") {
      if (!e.contains("verdict") || !e["verdict"].is_object() || !e["verdict"].contains("id") ||
          !e["verdict"]["id"].is_number_integer()) {
        ++malformed_;
        continue;
      }
      const auto& v = e["verdict"];
      const std::string ident = ident_of(v);
      if (!idents_.insert(ident).second) continue;  // already applied
      key_of_ident_[ident] = key;
      open_[key] = {v["id"].get<std::int64_t>(), text_of(v, "vkey")};  // the latest verdict of the incident
      verdicts_.push_back(v);
      if (text_of(v, "kind") == "observer_lost" && v.contains("evidence") && v["evidence"].is_object() &&
          v["evidence"].contains("observer") && v["evidence"]["observer"].is_number_integer())
        lost_unrecorded_.erase(v["evidence"]["observer"].get<int>());
    } else if (op == "resolve") {
      if (!e.contains("id") || !e["id"].is_number_integer()) {
        ++malformed_;
        continue;
      }
      const auto id = e["id"].get<std::int64_t>();
      const std::string vkey = text_of(e, "vkey"), at = text_of(e, "at");
      auto same = [&](const json& v) {
        return vkey.empty() ? ident_of(v) == "id:" + std::to_string(id) : ident_of(v) == vkey;
      };
      for (auto& v : verdicts_)
        if (same(v) && v["resolved_at"].is_null()) v["resolved_at"] = at;
      auto it = open_.find(key);
      if (it != open_.end() && (vkey.empty() ? it->second.id == id && it->second.vkey.empty() : it->second.vkey == vkey))
        open_.erase(it);
    } else {
      ++malformed_;
    }
  }
}

IncidentBook::Digest IncidentBook::digest() const {
  Digest d;
  d.verdicts = verdicts_.size();
  for (auto& v : verdicts_) {
    const std::string ident = ident_of(v);
    d.hash ^= fnv(ident);
    if (v.contains("resolved_at") && !v["resolved_at"].is_null()) {
      ++d.resolved;
      d.hash ^= fnv(ident + "/resolved");
    }
  }
  return d;
}

json IncidentBook::snapshot() const {
  json events = json::array();
  for (auto& v : verdicts_) {
    const auto id = v.contains("id") && v["id"].is_number_integer() ? v["id"].get<std::int64_t>() : 0;
    auto k = key_of_ident_.find(ident_of(v));
    const std::string key = k == key_of_ident_.end() ? std::string() : k->second;
    json fresh = v;
    fresh["resolved_at"] = nullptr;
    events.push_back({{"op", "new"}, {"key", key}, {"verdict", fresh}});
    if (v.contains("resolved_at") && v["resolved_at"].is_string())
      events.push_back({{"op", "resolve"}, {"key", key}, {"id", id}, {"vkey", text_of(v, "vkey")},
                        {"at", v["resolved_at"]}});
  }
  return events;
}

std::int64_t IncidentBook::open_id(const std::string& key) const {
  auto it = open_.find(key);
  return it == open_.end() ? 0 : it->second.id;
}

std::string IncidentBook::open_vkey(const std::string& key) const {
  auto it = open_.find(key);
  return it == open_.end() ? std::string() : it->second.vkey;
}

std::vector<std::string> IncidentBook::open_keys(const std::vector<std::string>& prefixes) const {
  std::vector<std::string> out;
  for (auto& [key, o] : open_)
    for (auto& p : prefixes)
      if (key.rfind(p, 0) == 0) {
        out.push_back(key);
        break;
      }
  return out;
}

std::set<std::string> IncidentBook::debounce_inconclusive(const std::vector<std::string>& keys, int needed) {
  std::map<std::string, int> seen;
  std::set<std::string> ready;
  for (auto& k : keys) {
    if (seen.count(k)) continue;
    auto it = inconclusive_seen_.find(k);
    const int n = seen[k] = (it == inconclusive_seen_.end() ? 0 : it->second) + 1;
    if (n >= needed) ready.insert(k);
  }
  inconclusive_seen_ = std::move(seen);
  return ready;
}

}  // namespace scout::scoutd
