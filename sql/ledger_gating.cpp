// The ledger's gating decisions, the site's reference signatures and the blame count (see ledger.hpp).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "sql/ledger.hpp"
#include "sql/statements.hpp"
#include "sql/stmt.hpp"

namespace scout::sql {

using namespace statements;

namespace {
std::vector<GatingRow> read_gating(Stmt& s) {
  std::vector<GatingRow> out;
  while (s.step()) out.push_back({s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6)});
  s.reset();
  return out;
}
}  // namespace

void Ledger::insert_setting(const SettingRow& r) {
  stmt(kInsertSetting).bind(r.job_id).bind(r.step).bind(r.version).bind(r.key).bind(r.old_value).bind(r.new_value)
      .bind(r.set_by_uid).bind(r.set_by).bind(r.via_node).bind(r.set_at.empty() ? now_iso8601() : r.set_at).run();
}

std::vector<SettingRow> Ledger::settings(const std::string& job_id) {
  auto& s = stmt(kSelectSettings).bind(job_id);
  std::vector<SettingRow> out;
  while (s.step())
    out.push_back({s.text(0), s.text(1), s.i64(2), s.text(3), s.text(4), s.text(5), s.i64(6), s.text(7),
                   s.text(8), s.text(9)});
  s.reset();
  return out;
}

void Ledger::insert_gating(const GatingRow& g) {
  const std::string at = g.decided_at.empty() ? now_iso8601() : g.decided_at;
  transaction([&] {  // the decision and the node's state it sets, together
    auto& s = stmt(kInsertGating);
    if (g.job_id.empty()) s.bind_null();  // a node-level decision (clear)
    else s.bind(g.job_id);
    s.bind(g.node).bind(g.decision).bind(g.reason).bind(g.decided_by).bind(at)
        .bind(g.evidence.empty() ? std::string("{}") : g.evidence).run();
    const std::int64_t id = sqlite3_last_insert_rowid(db_);
    stmt(kUpdateNodeState).bind(g.node).bind(id).bind(g.decision).bind(g.reason).bind(at).run();
  });
}

std::vector<std::pair<std::int64_t, GatingRow>> Ledger::node_gating_page(const std::string& node,
                                                                         std::int64_t before_id, int limit,
                                                                         bool* more) {
  auto& s = stmt(kSelectNodeGatingPage).bind(node).bind(before_id).bind(static_cast<std::int64_t>(limit) + 1);
  std::vector<std::pair<std::int64_t, GatingRow>> out;
  *more = false;
  while (s.step()) {
    if (static_cast<int>(out.size()) == limit) {  // one more than asked: older ones remain
      *more = true;
      break;
    }
    out.push_back({s.i64(7), {s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6)}});
  }
  s.reset();
  return out;
}

std::optional<GatingRow> Ledger::last_clear(const std::string& node) {
  auto rows = read_gating(stmt(kSelectLastClear).bind(node));
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::pair<std::int64_t, std::int64_t> Ledger::submitted_by_job(std::int64_t origin_uid, const std::string& job_id) {
  auto& s = stmt(kSubmittedByJob).bind(origin_uid).bind(job_id);
  std::pair<std::int64_t, std::int64_t> out{0, 0};
  if (s.step()) out = {s.i64(0), s.i64(1)};
  s.reset();
  return out;
}

std::int64_t Ledger::submitted_since(std::int64_t origin_uid, const std::string& since) {
  auto& s = stmt(kSubmittedSince).bind(origin_uid).bind(since);
  std::int64_t out = 0;
  if (s.step()) out = s.i64(0);
  s.reset();
  return out;
}

std::int64_t Ledger::prune_decisions(const std::string& before, std::int64_t max_rows) {
  stmt(kPruneDecisions).bind(before).bind(max_rows).run();
  return sqlite3_changes(db_);
}


std::vector<GatingRow> Ledger::gating(const std::string& job_id) { return read_gating(stmt(kSelectGating).bind(job_id)); }

std::vector<GatingRow> Ledger::node_gating(const std::string& node) {
  return read_gating(stmt(kSelectNodeGating).bind(node));
}

std::optional<std::string> Ledger::reference_signature(const std::string& device_class, const std::string& recipe,
                                                       const std::string& seed) {
  auto& s = stmt(kSelectReference).bind(device_class).bind(recipe).bind(seed);
  std::optional<std::string> out;
  if (s.step()) out = s.text(0);
  s.reset();
  return out;
}

void Ledger::record_reference(const std::string& device_class, const std::string& recipe, const std::string& seed,
                              const std::string& signature, const std::string& node) {
  stmt(kInsertReference).bind(device_class).bind(recipe).bind(seed).bind(signature).bind(node).bind(now_iso8601()).run();
}

Ledger::Blame Ledger::node_blame(const std::string& node, const std::vector<std::string>& kinds,
                                 const std::string& since) {
  auto& s = stmt(kNodeBlame).bind(kinds_array(kinds)).bind(node).bind(since);
  Blame b;
  if (s.step()) {
    b.jobs = static_cast<int>(s.i64(0));
    b.users = static_cast<int>(s.i64(1));
  }
  s.reset();
  return b;
}


}  // namespace scout::sql
