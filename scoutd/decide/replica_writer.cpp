// Replicas of the job's verdicts in every node's ledger (see replica_writer.hpp).
#include "scoutd/decide/replica_writer.hpp"

#include <fmt/format.h>

namespace scout::scoutd {

using nlohmann::json;

ReplicaWriter::ReplicaWriter(VerdictSink& sink, std::string own_prefix, std::function<void(const std::string&)> log)
    : sink_(sink), own_prefix_(std::move(own_prefix) + "."), log_(std::move(log)) {}

namespace {
bool is_string(const json& o, const char* k) { return o.contains(k) && o[k].is_string(); }
}  // namespace

void ReplicaWriter::take(const json& events) {
  if (!events.is_array()) return;
  for (auto& e : events) {
    if (!e.is_object() || !is_string(e, "op")) {
      ++malformed_;
      continue;
    }
    const std::string op = e["op"].get<std::string>();
    if (op == "new") {
      if (!e.contains("verdict") || !e["verdict"].is_object()) {
        ++malformed_;
        continue;
      }
      // The deciding observer's verdict, in the one form (common/verdict.hpp).
      auto v = common::verdict_from_json(e["verdict"]);
      Item it;
      if (!v || !v->key || !from_common(*v, it.verdict)) {
        ++malformed_;
        continue;
      }
      if (it.verdict.vkey.empty() || it.verdict.vkey.rfind(own_prefix_, 0) == 0) continue;  // ours: committed
      it.verdict.key = is_string(e, "key") ? e["key"].get<std::string>() : std::string();
      queue_.push_back(std::move(it));
    } else if (op == "resolve") {
      if (!is_string(e, "vkey") || !is_string(e, "at")) {
        ++malformed_;
        continue;
      }
      Item it;
      it.resolution = true;
      it.vkey = e["vkey"].get<std::string>();
      it.at = e["at"].get<std::string>();
      if (it.vkey.empty() || it.vkey.rfind(own_prefix_, 0) == 0) continue;
      queue_.push_back(std::move(it));
    } else {
      ++malformed_;
    }
  }
}

std::size_t ReplicaWriter::flush() {
  std::size_t done = 0;
  while (!queue_.empty()) {
    const Item& it = queue_.front();
    try {
      if (it.resolution) sink_.commit_resolution(it.vkey, it.at);
      else sink_.commit_verdict(it.verdict);
    } catch (const std::exception& e) {
      if (failures_logged_++ < 20 || failures_logged_ % 100 == 0)
        log_(fmt::format("ledger: replica of {} not committed yet ({} pending), will retry: {}",
                         it.resolution ? it.vkey : it.verdict.vkey, queue_.size(), e.what()));
      break;
    }
    queue_.pop_front();
    ++done;
  }
  if (queue_.empty()) failures_logged_ = 0;
  return done;
}

}  // namespace scout::scoutd
