// The ledger's verdicts and confirmations tables: writing, importing, reading, the open verdicts (see ledger.hpp).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "sql/ledger.hpp"
#include "sql/statements.hpp"
#include "sql/stmt.hpp"

namespace scout::sql {

using namespace statements;

std::int64_t Ledger::insert_verdict(const VerdictRow& v) {
  if (!v.vkey) {
    stmt(kInsertVerdict).bind(v.job_id).bind(v.step).bind(v.kind).bind(v.status).bind(v.ranks)
        .bind(v.hosts).bind(v.evidence)
        .bind(v.detected_at.empty() ? now_iso8601() : v.detected_at).run();
    return sqlite3_last_insert_rowid(db_);
  }
  auto& s = stmt(kInsertKeyedVerdict).bind(v.job_id).bind(v.step).bind(v.kind).bind(v.status).bind(v.ranks)
                .bind(v.hosts).bind(v.evidence).bind(v.detected_at.empty() ? now_iso8601() : v.detected_at);
  if (v.resolved_at) s.bind(*v.resolved_at); else s.bind_null();
  s.bind(*v.vkey).run();
  auto& q = stmt(kVerdictIdByKey).bind(*v.vkey);
  std::int64_t id = q.step() ? q.i64(0) : 0;
  q.reset();
  return id;
}

std::vector<NodeSummary> Ledger::node_summaries(const std::string& now_iso) {
  const std::int64_t now_ms = iso_to_unix_ms(now_iso);
  const std::string since7 = unix_ms_to_iso(now_ms - 7LL * 86400 * 1000);
  const std::string since30 = unix_ms_to_iso(now_ms - 30LL * 86400 * 1000);
  std::vector<NodeSummary> out;
  auto& s = stmt(kNodeSummaries).bind(since7).bind(since30);
  while (s.step())
    out.push_back({s.text(0), s.i64(1), s.i64(2), s.i64(3), s.i64(4), s.i64(5), s.text(6), s.text(7)});
  s.reset();
  return out;
}

LedgerMetrics Ledger::metrics() {
  LedgerMetrics m;
  {
    auto& s = stmt(kCountVerdicts);
    while (s.step()) m.verdicts[{s.text(0), s.text(1)}] = s.i64(2);
    s.reset();
  }
  {
    auto& s = stmt(kCountOpenByNode);
    while (s.step()) m.open_by_node[s.text(0)] = s.i64(1);
    s.reset();
  }
  {
    auto& s = stmt(kCountDrainsByNode);
    while (s.step()) m.drains_by_node[s.text(0)] = s.i64(1);
    s.reset();
  }
  auto& s = stmt(kDrainedNow);
  while (s.step()) m.drained_now[s.text(0)] = s.i64(1) != 0;
  s.reset();
  return m;
}

int Ledger::import_verdict(const VerdictRow& v, const std::string& origin, std::int64_t origin_uid) {
  auto& s = stmt(kImportVerdict).bind(v.job_id).bind(v.step).bind(v.kind).bind(v.status).bind(v.ranks)
                .bind(v.hosts).bind(v.evidence).bind(v.detected_at);
  if (v.resolved_at) s.bind(*v.resolved_at); else s.bind_null();
  // A row without an id in its source (a service submission) has no
  // origin_id: NULLs are distinct under verdicts_by_origin, the vkey keys it.
  s.bind(origin);
  if (v.id > 0) s.bind(v.id); else s.bind_null();
  s.bind(origin_uid).bind(now_iso8601());
  if (v.vkey) s.bind(*v.vkey); else s.bind_null();
  s.run();
  const int changed = sqlite3_changes(db_);
  if (!changed && v.vkey && v.resolved_at) stmt(kResolveImportedByKey).bind(*v.resolved_at).bind(*v.vkey).run();
  return changed;
}

void Ledger::resolve_verdict_by_key(const std::string& vkey, const std::string& resolved_at) {
  stmt(kResolveVerdictByKey).bind(resolved_at).bind(vkey).run();
}

int Ledger::import_job(Ledger& from, const std::string& job_id, const std::string& origin,
                       std::int64_t origin_uid, const std::function<bool(const VerdictRow&)>& keep,
                       ImportDropped* dropped) {
  ImportDropped local;
  ImportDropped& d = dropped ? *dropped : local;
  d = {};
  auto src_job = from.job(job_id);
  auto src_nodes = from.nodes(job_id);
  auto src_verdicts = from.verdicts(job_id);
  // A source is someone's file: take a bounded share of it, in rows per
  // table and in bytes for the whole job.
  auto cap = [&d](auto& rows) {
    if (rows.size() > kImportMaxRows) {
      d.rows += rows.size() - kImportMaxRows;
      rows.resize(kImportMaxRows);
    }
  };
  std::size_t budget = kImportMaxBytes;
  auto take = [&](std::size_t bytes) {
    if (bytes > budget) {
      ++d.rows;
      return false;
    }
    budget -= bytes;
    return true;
  };
  auto sum = [](std::initializer_list<std::size_t> sizes) {
    std::size_t n = 0;
    for (auto z : sizes) n += z;
    return n;
  };
  cap(src_nodes);
  cap(src_verdicts);
  // Schema v3 sources also carry replay cycles and checkpoint states.
  std::vector<ReplayCycleRow> src_cycles;
  std::vector<CheckpointRow> src_ckpts;
  if (from.schema_version() >= 3) {
    src_cycles = from.replay_cycles(job_id);
    src_ckpts = from.checkpoints(job_id);
    cap(src_cycles);
    cap(src_ckpts);
  }
  const std::string now = now_iso8601();
  int added = 0;
  transaction([&] {
    if (src_job) {
      const auto& r = *src_job;
      stmt(kInsertJobIfMissing).bind(r.job_id).bind(r.user).bind(origin_uid >= 0 ? origin_uid : r.uid).bind(r.launcher)
          .bind(r.command).bind(r.nodes).bind(r.ranks).bind(r.started_at).run();
    } else {
      stmt(kInsertJobIfMissing).bind(job_id).bind(std::string("?")).bind(origin_uid)
          .bind(std::string("slurm")).bind(std::string("")).bind(std::int64_t{0})
          .bind(std::int64_t{0}).bind(now).run();
    }
    for (auto& n : src_nodes)
      if (take(sum({n.job_id.size(), n.node.size(), n.joined_at.size()}) + 64)) upsert_node(n);
    for (auto& v : src_verdicts) {
      // A key is its job's (<job>.<step>...): a user's spool cannot take
      // the key of another job's verdict before that verdict is written.
      // '@' is a retired key's (Ledger::renew_job): never a spool's.
      const bool foreign_key =
          v.vkey && (v.vkey->rfind(job_id + ".", 0) != 0 || v.vkey->find('@') != std::string::npos);
      if (v.job_id != job_id || foreign_key) continue;
      if (v.evidence.size() > kImportMaxEvidenceBytes) {
        v.evidence = fmt::format(R"({{"dropped":"evidence of {} bytes; at most {} are imported"}})",
                                 v.evidence.size(), kImportMaxEvidenceBytes);
        ++d.evidence;
      }
      // Within the job's bytes before `keep` sees it: what it keeps (root's
      // epilog forwards it) is what is imported.
      const std::size_t bytes = sum({v.step.size(), v.kind.size(), v.status.size(), v.ranks.size(), v.hosts.size(),
                                     v.evidence.size(), v.detected_at.size(), v.vkey.value_or("").size()});
      if (bytes > budget) {
        ++d.rows;
        continue;
      }
      if (!keep(v)) continue;
      budget -= bytes;
      added += import_verdict(v, origin, origin_uid);  // the same verdict from another node's spool: known
    }
    for (auto& c : src_cycles)
      if (take(sum({c.outcome.size(), c.detail.size()}) + 64))
        stmt(kImportCycle).bind(c.job_id).bind(c.cycle).bind(c.started_ms).bind(c.finished_ms)
            .bind(c.observers).bind(c.expected).bind(c.devices).bind(c.outcome).bind(c.cpu_s).bind(c.detail).run();
    for (auto& c : src_ckpts)
      if (take(sum({c.path.size(), c.seen_at.size(), c.state.size(), c.reason.size(), c.updated_at.size()}) + 64))
        stmt(kImportCheckpoint).bind(c.job_id).bind(c.path).bind(c.written_ms).bind(c.seen_at).bind(c.state)
            .bind(c.reason).bind(c.updated_at).run();
  });
  return added;
}

void Ledger::resolve_verdict(std::int64_t id, const std::string& resolved_at) {
  stmt(kResolveVerdict).bind(resolved_at).bind(id).run();
}

namespace {
std::vector<VerdictRow> read_verdicts(Stmt& s) {
  std::vector<VerdictRow> out;
  while (s.step()) {
    VerdictRow v;
    v.id = s.i64(0);
    v.job_id = s.text(1);
    v.step = s.text(2);
    v.kind = s.text(3);
    v.status = s.text(4);
    v.ranks = s.text(5);
    v.hosts = s.text(6);
    v.evidence = s.text(7);
    v.detected_at = s.text(8);
    v.resolved_at = s.opt_text(9);
    v.origin = s.opt_text(10);
    v.vkey = s.opt_text(11);
    v.confirmation = s.opt_text(12);
    out.push_back(std::move(v));
  }
  s.reset();
  return out;
}
}  // namespace

std::vector<VerdictRow> Ledger::verdicts(const std::string& job_id) {
  const int v = schema_version();
  return read_verdicts(stmt(v >= 6 ? kSelectVerdicts : v == 5 ? kSelectVerdictsV5 : kSelectVerdictsV4).bind(job_id));
}

std::vector<VerdictRow> Ledger::verdicts_page(const std::string& job_id, std::int64_t after_id, int limit) {
  return read_verdicts(stmt(kSelectVerdictsPage).bind(job_id).bind(after_id).bind(static_cast<std::int64_t>(limit)));
}

std::vector<VerdictRow> Ledger::open_verdicts_on(const std::string& node, const std::vector<std::string>& kinds,
                                                 bool confirmed_only) {
  return read_verdicts(
      stmt(kSelectOpenOnNode).bind(kinds_array(kinds)).bind(node).bind(std::int64_t{confirmed_only ? 1 : 0}));
}

void Ledger::confirm(const std::string& key, const std::string& node, const std::string& confirmation,
                     const std::string& decided_by) {
  transaction([&] {
    stmt(kConfirm).bind(key).bind(node).bind(confirmation).bind(decided_by).bind(now_iso8601()).run();
    stmt(kSummariseConfirmation).bind(key).run();
  });
}

std::optional<Ledger::KeyOwner> Ledger::key_owner(const std::string& vkey) {
  auto& s = stmt(kKeyOwner).bind(vkey);
  std::optional<KeyOwner> out;
  if (s.step()) {
    out.emplace();
    out->id = s.i64(0);
    out->job_id = s.text(1);
    if (auto u = s.opt_text(2)) out->origin_uid = std::strtoll(u->c_str(), nullptr, 10);
    out->origin = s.text(3);
    out->confirmed_by_root = s.i64(4) != 0;
    out->kind = s.text(5);
    out->status = s.text(6);
    out->ranks = s.text(7);
    out->hosts = s.text(8);
  }
  s.reset();
  return out;
}

void Ledger::replace_verdict_by_key(const VerdictRow& v, const std::string& origin, std::int64_t origin_uid) {
  auto& s = stmt(kReplaceByKey).bind(*v.vkey).bind(v.step).bind(v.kind).bind(v.status).bind(v.ranks).bind(v.hosts)
                .bind(v.evidence).bind(v.detected_at);
  if (v.resolved_at) s.bind(*v.resolved_at); else s.bind_null();
  s.bind(origin).bind(origin_uid).bind(now_iso8601()).run();
}

std::int64_t Ledger::count_verdicts_from(const std::string& job_id, std::int64_t origin_uid) {
  auto& s = stmt(kCountVerdictsFrom).bind(job_id).bind(origin_uid);
  std::int64_t n = s.step() ? s.i64(0) : 0;
  s.reset();
  return n;
}


}  // namespace scout::sql
