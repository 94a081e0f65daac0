// The decider (see decider.hpp).
#include "scoutd/decide/decider.hpp"

#include <limits>

#include <fmt/format.h>

namespace scout::scoutd {

using nlohmann::json;

Decider::Decider(std::string job, std::string step, std::string vkey_prefix, IncidentBook& book, VerdictSink& sink,
                 Hooks hooks)
    : job_(std::move(job)), step_(std::move(step)), vkey_prefix_(std::move(vkey_prefix)), book_(book), sink_(sink),
      hooks_(std::move(hooks)) {}

bool Decider::queued_new(const std::string& key) const {
  for (auto& i : queue_)
    if (!i.resolution && i.key == key) return true;
  return false;
}

bool Decider::queued_resolution(const std::string& key) const {
  for (auto& i : queue_)
    if (i.resolution && i.key == key) return true;
  return false;
}

void Decider::propose(const VerdictDraft& d) {
  if (book_.is_open(d.key) || queued_new(d.key)) return;  // same incident
  Item it;
  it.key = d.key;
  it.verdict = {d, hooks_.now_iso(), fmt::format("{}.{}", vkey_prefix_, ++vkey_seq_)};
  queue_.push_back(std::move(it));
}

void Decider::propose_all(const std::vector<VerdictDraft>& drafts) {
  std::vector<std::string> inconclusive;
  for (auto& d : drafts)
    if (d.status == c3::VerdictStatus::kInconclusive) inconclusive.push_back(d.key);
  const auto ready = book_.debounce_inconclusive(inconclusive);
  for (auto& d : drafts)
    if (d.status != c3::VerdictStatus::kInconclusive || ready.count(d.key)) propose(d);
}

void Decider::resolve(const std::string& key) {
  if (queued_resolution(key)) return;
  if (!book_.is_open(key) && !queued_new(key)) return;
  Item it;
  it.resolution = true;
  it.key = key;
  it.at = hooks_.now_iso();
  queue_.push_back(std::move(it));
}

void Decider::progress_resumed() {
  for (auto& key : book_.open_keys({"behind", "hang", "divergence"})) resolve(key);
  for (auto& i : std::deque<Item>(queue_))
    if (!i.resolution && (i.key.rfind("behind", 0) == 0 || i.key.rfind("hang", 0) == 0 ||
                          i.key.rfind("divergence", 0) == 0))
      resolve(i.key);
}

std::set<std::string> Decider::open_or_queued(const std::string& prefix) const {
  std::set<std::string> out;
  for (auto& k : book_.open_keys({prefix})) out.insert(k);
  for (auto& i : queue_)
    if (!i.resolution && i.key.rfind(prefix, 0) == 0) out.insert(i.key);
  for (auto& i : queue_)
    if (i.resolution) out.erase(i.key);
  return out;
}

std::size_t Decider::flush(json& events) {
  std::size_t done = 0;
  while (!queue_.empty()) {
    Item& it = queue_.front();
    json ev;
    try {
      if (!it.resolution && book_.is_open(it.key)) {
        // Another deciding observer committed this incident meanwhile (its
        // book arrived since this was queued): not a second verdict.
        queue_.pop_front();
        continue;
      }
      if (!it.resolution) {
        const std::int64_t id = sink_.commit_verdict(it.verdict);  // committed before anyone is told
        const auto& v = it.verdict;
        ev = {{"op", "new"}, {"key", it.key}, {"verdict", common::to_json(to_common(v, id, job_, step_))}};
        hooks_.log(fmt::format("verdict {}: {} {} ranks {} hosts {}", id, c3::to_string(v.kind),
                               c3::to_string(v.status), json(v.ranks).dump(), json(v.hosts).dump()));
      } else {
        const std::int64_t id = book_.open_id(it.key);
        if (id != 0) {
          const std::string vkey = book_.open_vkey(it.key);
          sink_.commit_resolution(vkey, it.at);
          ev = {{"op", "resolve"}, {"key", it.key}, {"id", id}, {"vkey", vkey}, {"at", it.at}};
        }
      }
    } catch (const std::exception& e) {
      // Kept at the head of the queue; the next round tries again.
      if (failures_logged_++ < 20 || failures_logged_ % 100 == 0)
        (hooks_.warn ? hooks_.warn : hooks_.log)(fmt::format("ledger: {} {} not committed yet ({} pending), will retry: {}",
                               it.resolution ? "resolution of" : "verdict", it.key, queue_.size(), e.what()));
      break;
    }
    if (!ev.is_null()) {
      book_.apply(json::array({ev}));
      events.push_back(std::move(ev));
    }
    queue_.pop_front();
    ++done;
  }
  if (queue_.empty()) failures_logged_ = 0;
  return done;
}

VerdictDraft observer_lost_draft(const ObserverFacts& o, double round_timeout_s) {
  VerdictDraft d;
  d.kind = c3::VerdictKind::kObserverLost;
  d.status = c3::VerdictStatus::kAttributed;
  d.ranks = o.ranks;
  d.hosts = {o.node};
  d.evidence = {{"rule", "observer missed its consensus round deadline"},
                {"observer", o.observer}, {"node", o.node}, {"scoutd_pid", o.pid},
                {"unobserved_ranks", d.ranks}, {"round_timeout_s", round_timeout_s}};
  d.key = fmt::format("observer_lost:{}", o.observer);
  return d;
}

common::Verdict to_common(const VerdictToCommit& v, std::int64_t id, const std::string& job, const std::string& step) {
  common::Verdict c;
  c.id = id;
  c.job = job;
  c.step = step;
  c.kind = v.kind;
  c.status = v.status;
  c.ranks.assign(v.ranks.begin(), v.ranks.end());
  c.hosts = v.hosts;
  c.evidence = v.evidence.is_object() ? v.evidence : json::object();
  c.detected_at = v.detected_at;
  c.key = v.vkey;
  return c;
}

bool from_common(const common::Verdict& c, VerdictToCommit& out) {
  out.kind = c.kind;
  out.status = c.status;
  out.ranks.clear();
  for (auto r : c.ranks) {
    if (r < 0 || r > std::numeric_limits<int>::max()) return false;
    out.ranks.push_back(static_cast<int>(r));
  }
  out.hosts = c.hosts;
  out.evidence = c.evidence;
  out.detected_at = c.detected_at;
  out.vkey = c.key.value_or("");
  return true;
}

}  // namespace scout::scoutd
