// The ledger's replay cycles and checkpoints tables (see ledger.hpp).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "sql/ledger.hpp"
#include "sql/statements.hpp"
#include "sql/stmt.hpp"

namespace scout::sql {

using namespace statements;

void Ledger::insert_replay_cycle(const ReplayCycleRow& r) {
  stmt(kInsertCycle).bind(r.job_id).bind(r.cycle).bind(r.started_ms).bind(r.finished_ms)
      .bind(r.observers).bind(r.expected).bind(r.devices).bind(r.outcome).bind(r.cpu_s)
      .bind(r.detail).run();
}

std::vector<ReplayCycleRow> Ledger::replay_cycles(const std::string& job_id) {
  std::vector<ReplayCycleRow> out;
  auto& s = stmt(kSelectCycles).bind(job_id);
  while (s.step())
    out.push_back({s.text(0), s.i64(1), s.i64(2), s.i64(3), s.i64(4), s.i64(5), s.i64(6),
                   s.text(7), s.f64(8), s.text(9)});
  return out;
}

bool Ledger::add_checkpoint(const CheckpointRow& c) {
  const std::string now = now_iso8601();
  stmt(kInsertCheckpoint).bind(c.job_id).bind(c.path).bind(c.written_ms)
      .bind(c.seen_at.empty() ? now : c.seen_at).bind(c.state.empty() ? std::string("candidate") : c.state)
      .bind(c.reason).bind(now).run();
  return sqlite3_changes(db_) > 0;
}

void Ledger::set_checkpoint_state(std::int64_t id, const std::string& state, const std::string& reason) {
  stmt(kUpdateCheckpoint).bind(state).bind(reason).bind(now_iso8601()).bind(id).run();
}

std::vector<CheckpointRow> Ledger::checkpoints(const std::string& job_id) {
  std::vector<CheckpointRow> out;
  auto& s = stmt(kSelectCheckpoints).bind(job_id);
  while (s.step())
    out.push_back({s.i64(0), s.text(1), s.text(2), s.i64(3), s.text(4), s.text(5), s.text(6), s.text(7)});
  return out;
}


}  // namespace scout::sql
