// Store and forward to scout-ledgerd (see forwarder.hpp).
#include "scoutd/beside/forwarder.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "common/verdict.hpp"

namespace scout::scoutd {

using nlohmann::json;

Forwarder::Forwarder(std::string job, Send send, std::function<void(const std::string&)> log, Report report)
    : job_(std::move(job)), send_(std::move(send)), report_(std::move(report)), log_(std::move(log)) {
  thread_ = std::thread([this] { loop(); });
}

Forwarder::~Forwarder() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Forwarder::take(const json& events) {
  if (!events.is_array()) return;
  std::lock_guard lk(mu_);
  for (auto& e : events) {
    if (!e.is_object() || !e.contains("op") || !e["op"].is_string()) continue;
    const std::string op = e["op"].get<std::string>();
    if (op == "new" && e.contains("verdict") && e["verdict"].is_object()) {
      // Read and sent in the one form (common/verdict.hpp); the service
      // stamps its own row id, provenance and confirmation.
      auto v = common::verdict_from_json(e["verdict"]);
      if (!v || !v->key) continue;
      const std::string k = *v->key;
      json out = common::to_json(*v);
      for (const char* f : {"id", "origin", "confirmation"}) out.erase(f);
      if (out["resolved_at"].is_null()) out.erase("resolved_at");
      auto it = verdicts_.find(k);
      if (it != verdicts_.end() && it->second.contains("resolved_at") && !out.contains("resolved_at")) continue;
      verdicts_[k] = std::move(out);
      dirty_.push_back(k);
      queued_at_.emplace(k, std::chrono::steady_clock::now());
    } else if (op == "resolve" && e.contains("vkey") && e["vkey"].is_string() && e.contains("at") &&
               e["at"].is_string()) {
      auto it = verdicts_.find(e["vkey"].get<std::string>());
      if (it == verdicts_.end()) continue;  // not ours to forward
      it->second["resolved_at"] = e["at"];
      dirty_.push_back(it->first);
      queued_at_.emplace(it->first, std::chrono::steady_clock::now());
    }
  }
  cv_.notify_all();
}

void Forwarder::loop() {
  std::size_t failures = 0;
  std::unique_lock lk(mu_);
  while (!stop_) {
    if (dirty_.empty() || backoff_s_ > 0) {
      cv_.wait_for(lk, std::chrono::duration<double>(backoff_s_ > 0 ? backoff_s_ : 3600),
                   [&] { return stop_ || (!dirty_.empty() && backoff_s_ == 0); });
      if (stop_) break;
      backoff_s_ = 0;
      if (dirty_.empty()) continue;
    }
    if (std::chrono::steady_clock::now() - last_report_ >= std::chrono::duration<double>(kReportPeriodS))
      report_locked(lk);
    // One batch: the distinct keys at the head of the queue, latest state.
    json batch = json::array();
    std::vector<std::string> keys;
    for (auto& k : dirty_) {
      if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
      keys.push_back(k);
      batch.push_back(verdicts_[k]);
      if (keys.size() >= 100) break;
    }
    lk.unlock();
    bool ok = true;
    std::string why;
    try {
      send_(job_, batch);
    } catch (const std::exception& e) {
      ok = false;
      why = e.what();
    }
    lk.lock();
    if (ok) {
      sent_ += keys.size();
      // A key queued again while it was being sent (a resolution) stays.
      for (auto& k : keys)
        if (auto it = std::find(dirty_.begin(), dirty_.end(), k); it != dirty_.end()) dirty_.erase(it);
      for (auto& k : keys)
        if (std::find(dirty_.begin(), dirty_.end(), k) == dirty_.end()) queued_at_.erase(k);
      if (failures) log_(fmt::format("ledgerd: reachable again; {} verdict(s) forwarded", keys.size()));
      failures = 0;
      if (reported_nonzero_ || !dirty_.empty()) report_locked(lk);
    } else {
      ++failures;
      backoff_s_ = hurry_ ? 0.2 : std::min(30.0, 0.5 * static_cast<double>(1u << std::min<std::size_t>(failures, 6)));
      if (failures <= 3 || failures % 20 == 0)
        log_(fmt::format("ledgerd: {} verdict(s) not forwarded yet, retrying in {:.1f} s: {}", dirty_.size(), backoff_s_,
                         why));
      report_locked(lk);  // refused sends: the service still hears of the backlog
    }
  }
}

double Forwarder::oldest_locked(std::chrono::steady_clock::time_point now) const {
  double oldest = 0;
  for (auto& [k, at] : queued_at_) oldest = std::max(oldest, std::chrono::duration<double>(now - at).count());
  return oldest;
}

// Called with the lock held; released while the service is asked.
void Forwarder::report_locked(std::unique_lock<std::mutex>& lk) {
  if (!report_) return;
  const auto now = std::chrono::steady_clock::now();
  const std::size_t n = dirty_.size();
  const double oldest = oldest_locked(now);
  last_report_ = now;
  lk.unlock();
  bool ok = true;
  try {
    report_(n, oldest);
  } catch (const std::exception&) {
    ok = false;  // unreachable: the next report says it again
  }
  lk.lock();
  // A report that failed may still have reached the service (a lost
  // reply): a backlog it may hold is cleared by an empty report that got through.
  if (n > 0) reported_nonzero_ = true;
  else if (ok) reported_nonzero_ = false;
}

double Forwarder::oldest_s() const {
  std::lock_guard lk(mu_);
  return oldest_locked(std::chrono::steady_clock::now());
}

std::size_t Forwarder::drain(double deadline_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  std::unique_lock lk(mu_);
  hurry_ = true;  // short back-off now: the job is ending
  backoff_s_ = 0;
  while (!dirty_.empty() && std::chrono::steady_clock::now() < end) {
    lk.unlock();
    cv_.notify_all();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    lk.lock();
  }
  return dirty_.size();
}

std::size_t Forwarder::pending() const {
  std::lock_guard lk(mu_);
  return dirty_.size();
}

std::uint64_t Forwarder::sent() const {
  std::lock_guard lk(mu_);
  return sent_;
}

}  // namespace scout::scoutd
