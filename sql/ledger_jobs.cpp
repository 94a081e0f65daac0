// The ledger's jobs, nodes and ranks tables (see ledger.hpp).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "sql/ledger.hpp"
#include "sql/statements.hpp"
#include "sql/stmt.hpp"

namespace scout::sql {

using namespace statements;

std::string Ledger::reserve_local_job(JobRow row) {
  exec("BEGIN IMMEDIATE");
  try {
    auto& s = stmt(kMaxLocalJob);
    std::int64_t max = s.step() ? s.i64(0) : 0;
    s.reset();
    row.job_id = std::to_string(std::max<std::int64_t>(max + 1, 1000000));
    insert_job(row);
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return row.job_id;
}

void Ledger::insert_job(const JobRow& r) {
  stmt(kInsertJob).bind(r.job_id).bind(r.user).bind(r.uid).bind(r.launcher).bind(r.command)
      .bind(r.nodes).bind(r.ranks).bind(r.started_at.empty() ? now_iso8601() : r.started_at)
      .run();
}

void Ledger::insert_job_if_missing(const JobRow& r) {
  stmt(kInsertJobIfMissing).bind(r.job_id).bind(r.user).bind(r.uid).bind(r.launcher).bind(r.command)
      .bind(r.nodes).bind(r.ranks).bind(r.started_at.empty() ? now_iso8601() : r.started_at).run();
}

void Ledger::end_job(const std::string& job_id, std::int64_t exit_status) {
  stmt(kEndJob).bind(now_iso8601()).bind(exit_status).bind(job_id).run();
}

std::optional<JobRow> Ledger::job(const std::string& job_id) {
  auto& s = stmt(kSelectJob).bind(job_id);
  if (!s.step()) return std::nullopt;
  JobRow r;
  r.job_id = s.text(0);
  r.user = s.text(1);
  r.uid = s.i64(2);
  r.launcher = s.text(3);
  r.command = s.text(4);
  r.nodes = s.i64(5);
  r.ranks = s.i64(6);
  r.started_at = s.text(7);
  r.ended_at = s.opt_text(8);
  if (auto t = s.opt_text(9)) r.exit_status = std::stoll(*t);
  s.reset();
  return r;
}

void Ledger::upsert_node(const NodeRow& r) {
  stmt(kUpsertNode).bind(r.job_id).bind(r.node).bind(r.scoutd_pid).bind(r.first_rank)
      .bind(r.last_rank).bind(r.joined_at.empty() ? now_iso8601() : r.joined_at).run();
}

std::vector<NodeRow> Ledger::nodes(const std::string& job_id) {
  std::vector<NodeRow> out;
  auto& s = stmt(kSelectNodes).bind(job_id);
  while (s.step())
    out.push_back({s.text(0), s.text(1), s.i64(2), s.i64(3), s.i64(4), s.text(5)});
  s.reset();
  return out;
}

void Ledger::upsert_rank(const std::string& job_id, const std::string& step, std::int64_t rank,
                         const std::string& node, std::int64_t pid) {
  stmt(kUpsertRank).bind(job_id).bind(step).bind(rank).bind(node).bind(pid).run();
}

std::vector<int> Ledger::rank_pids(const std::string& job_id) {
  std::vector<int> out;
  auto& s = stmt(kRankPids).bind(job_id);
  while (s.step()) out.push_back(static_cast<int>(s.i64(0)));
  s.reset();
  return out;
}

void Ledger::set_job_owner(const std::string& job_id, const std::string& user, std::int64_t uid) {
  stmt(kSetJobOwner).bind(job_id).bind(user).bind(uid).run();
}

int Ledger::renew_job(const std::string& job_id, const std::string& user, std::int64_t uid,
                      const std::string& started_at) {
  stmt(kRetireConfirmations).bind(job_id).run();
  stmt(kDropOrphanConfirmations).bind(job_id).run();
  stmt(kRetireVerdictKeys).bind(job_id).run();
  const int retired = sqlite3_changes(db_);
  stmt(kRenewJob).bind(job_id).bind(started_at).bind(user).bind(uid).run();
  return retired;
}


}  // namespace scout::sql
