// Store and forward to the site ledger service: the deciding observer hands
// over every verdict it committed (and every resolution); a thread of its
// own sends them to scout-ledgerd in batches, idempotently (each verdict by
// its stable key), retrying with back-off while the service is unreachable.
// The node-local spool is the store: what is still unsent when scoutd stops
// (or dies) is forwarded by the epilog. Never blocks a consensus round.
// The backlog (verdicts not forwarded yet, the age of the oldest) is
// reported to the service after a failed or partial send, at least every
// kReportPeriodS while anything waits, and once more when it is empty again,
// so the site's monitoring sees a scoutd whose verdicts do not get through.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace scout::scoutd {

class Forwarder {
 public:
  // `send` submits one batch (a JSON array of verdicts of `job`) and throws
  // on failure (unreachable, refused); it runs on the forwarder's thread.
  using Send = std::function<void(const std::string& job, const nlohmann::json& verdicts)>;
  // `report` tells the service the backlog (may be empty: not reported);
  // it throws on failure, which is ignored (the next report says it again).
  using Report = std::function<void(std::size_t pending, double oldest_s)>;
  static constexpr double kReportPeriodS = 30;
  Forwarder(std::string job, Send send, std::function<void(const std::string&)> log, Report report = {});
  ~Forwarder();
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  // The events of a down message (or a book snapshot): new verdicts and
  // resolutions, by key. Cheap; the thread does the sending.
  void take(const nlohmann::json& events);
  // Sends what is pending, waiting at most `deadline_s`; returns how many
  // verdicts are still unsent (the epilog will forward them).
  std::size_t drain(double deadline_s);
  std::size_t pending() const;
  std::uint64_t sent() const;
  // Age of the oldest verdict not forwarded yet (0 when none waits).
  double oldest_s() const;

 private:
  void loop();
  double oldest_locked(std::chrono::steady_clock::time_point now) const;
  void report_locked(std::unique_lock<std::mutex>& lk);
  std::string job_;
  Send send_;
  Report report_;
  std::map<std::string, std::chrono::steady_clock::time_point> queued_at_;  // unsent key -> first queued
  std::chrono::steady_clock::time_point last_report_{};
  bool reported_nonzero_ = false;
  std::function<void(const std::string&)> log_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, nlohmann::json> verdicts_;  // vkey -> latest state
  std::deque<std::string> dirty_;                   // keys to (re)send, in order
  std::uint64_t sent_ = 0;
  bool stop_ = false;
  bool hurry_ = false;     // draining at stop: short back-off
  double backoff_s_ = 0;  // before the next try, after a failure
  std::thread thread_;
};

}  // namespace scout::scoutd
