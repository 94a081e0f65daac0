// Every SQL statement of the ledger access layer, as named constants (each
// is prepared once per connection in Ledger::stmt). The schema itself lives
// in migrations/; this file holds no DDL.
#pragma once

namespace scout::sql::statements {

inline constexpr const char* kInsertJob =
    "INSERT OR REPLACE INTO jobs(job_id,user,uid,launcher,command,nodes,ranks,started_at) "
    "VALUES(?,?,?,?,?,?,?,?)";
inline constexpr const char* kMaxLocalJob =
    "SELECT COALESCE(MAX(CAST(job_id AS INTEGER)),0) FROM jobs WHERE launcher='scout-run'";
inline constexpr const char* kInsertCycle =
    "INSERT OR REPLACE INTO replay_cycles(job_id,cycle,started_ms,finished_ms,observers,expected,"
    "devices,outcome,cpu_s,detail) VALUES(?,?,?,?,?,?,?,?,?,?)";
inline constexpr const char* kSelectCycles =
    "SELECT job_id,cycle,started_ms,finished_ms,observers,expected,devices,outcome,cpu_s,detail "
    "FROM replay_cycles WHERE job_id=? ORDER BY cycle";
inline constexpr const char* kInsertCheckpoint =
    "INSERT OR IGNORE INTO checkpoints(job_id,path,written_ms,seen_at,state,reason,updated_at) "
    "VALUES(?,?,?,?,?,?,?)";
inline constexpr const char* kImportCycle =
    "INSERT OR IGNORE INTO replay_cycles(job_id,cycle,started_ms,finished_ms,observers,expected,"
    "devices,outcome,cpu_s,detail) VALUES(?,?,?,?,?,?,?,?,?,?)";
inline constexpr const char* kImportCheckpoint =
    "INSERT OR REPLACE INTO checkpoints(job_id,path,written_ms,seen_at,state,reason,updated_at) "
    "VALUES(?,?,?,?,?,?,?)";
inline constexpr const char* kUpdateCheckpoint =
    "UPDATE checkpoints SET state=?, reason=?, updated_at=? WHERE id=?";
inline constexpr const char* kSelectCheckpoints =
    "SELECT id,job_id,path,written_ms,seen_at,state,reason,updated_at FROM checkpoints "
    "WHERE job_id=? ORDER BY written_ms, id";
inline constexpr const char* kEndJob = "UPDATE jobs SET ended_at=?, exit_status=? WHERE job_id=?";
inline constexpr const char* kSelectJob =
    "SELECT job_id,user,uid,launcher,command,nodes,ranks,started_at,ended_at,exit_status "
    "FROM jobs WHERE job_id=?";
inline constexpr const char* kUpsertNode =
    "INSERT OR REPLACE INTO nodes(job_id,node,scoutd_pid,first_rank,last_rank,joined_at) "
    "VALUES(?,?,?,?,?,?)";
inline constexpr const char* kSelectNodes =
    "SELECT job_id,node,scoutd_pid,first_rank,last_rank,joined_at FROM nodes WHERE job_id=? "
    "ORDER BY first_rank";
inline constexpr const char* kUpsertRank =
    "INSERT OR REPLACE INTO ranks(job_id,step,rank,node,pid) VALUES(?,?,?,?,?)";
inline constexpr const char* kImportVerdict =
    "INSERT OR IGNORE INTO verdicts(job_id,step,kind,status,ranks,hosts,evidence,detected_at,"
    "resolved_at,origin,origin_id,origin_uid,imported_at,vkey) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
inline constexpr const char* kResolveImportedByKey =
    "UPDATE verdicts SET resolved_at=? WHERE vkey=? AND resolved_at IS NULL";
inline constexpr const char* kInsertJobIfMissing =
    "INSERT OR IGNORE INTO jobs(job_id,user,uid,launcher,command,nodes,ranks,started_at) "
    "VALUES(?,?,?,?,?,?,?,?)";
inline constexpr const char* kInsertSetting =
    "INSERT OR IGNORE INTO settings(job_id,step,version,key,old_value,new_value,set_by_uid,set_by,via_node,set_at) "
    "VALUES(?,?,?,?,?,?,?,?,?,?)";
inline constexpr const char* kSelectSettings =
    "SELECT job_id,step,version,key,old_value,new_value,set_by_uid,set_by,via_node,set_at FROM settings "
    "WHERE job_id=? ORDER BY version, key";
inline constexpr const char* kInsertGating =
    "INSERT INTO gating(job_id,node,decision,reason,decided_by,decided_at,evidence) VALUES(?,?,?,?,?,?,?)";
inline constexpr const char* kSelectGating =
    "SELECT job_id,node,decision,reason,decided_by,decided_at,evidence FROM gating WHERE job_id=? ORDER BY id";
inline constexpr const char* kSelectNodeGating =
    "SELECT job_id,node,decision,reason,decided_by,decided_at,evidence FROM gating WHERE node=? ORDER BY id";
// A page of a node's decisions, newest first: ids below ?2 (0: from the
// newest), at most ?3.
inline constexpr const char* kSelectNodeGatingPage =
    "SELECT job_id,node,decision,reason,decided_by,decided_at,evidence,id FROM gating "
    "WHERE node=?1 AND (?2 = 0 OR id < ?2) ORDER BY id DESC LIMIT ?3";
// A node's latest clear (the open-verdict rule's cut).
inline constexpr const char* kSelectLastClear =
    "SELECT job_id,node,decision,reason,decided_by,decided_at,evidence FROM gating "
    "WHERE node=?1 AND decision='clear' ORDER BY decided_at DESC, id DESC LIMIT 1";
// A page of a job's verdicts: ids above ?2, at most ?3 (current schema).
inline constexpr const char* kSelectVerdictsPage =
    "SELECT id,job_id,step,kind,status,ranks,hosts,evidence,detected_at,resolved_at,origin,vkey,confirmation "
    "FROM verdicts WHERE job_id=?1 AND id > ?2 AND (vkey IS NULL OR instr(vkey, '@') = 0) ORDER BY id LIMIT ?3";
// What one submitter stored: per job, and since ?2 over every job (bytes
// of the columns a submitter fills).
#define SCOUT_SQL_SUBMITTED_BYTES "coalesce(sum(length(ranks) + length(hosts) + length(evidence) + " \
  "length(coalesce(vkey, '')) + length(step)), 0)"
inline constexpr const char* kSubmittedByJob =
    "SELECT count(*), " SCOUT_SQL_SUBMITTED_BYTES " FROM verdicts WHERE origin_uid=?1 AND job_id=?2";
inline constexpr const char* kSubmittedSince =
    "SELECT " SCOUT_SQL_SUBMITTED_BYTES " FROM verdicts WHERE origin_uid=?1 AND imported_at >= ?2";
// The open-verdict rule, in one place (every statement that counts or lists
// open verdicts is built with it): attributed, unresolved, and stamped after
// the node's last clear. Openness is decided by times root stamped
// (imported_at; detected_at is the user's word and only counts for rows never
// imported, as in a user's own ledger). V: the alias of a row with the
// verdicts' columns; NODE: an SQL expression naming the node.
#define SCOUT_SQL_OPEN_VERDICT(V, NODE)                                                                  \
  "(" V ".status='attributed' AND " V ".resolved_at IS NULL AND coalesce(" V ".imported_at, " V          \
  ".detected_at) > coalesce((SELECT max(decided_at) FROM gating WHERE node=" NODE " AND decision='clear'), ''))"
// Open verdicts on a node ?2, of the given kinds ?1 (a JSON array), naming
// the node; ?3: only those root confirmed there. The confirmation column is
// the one recorded for ?2 (schema 9).
inline constexpr const char* kSelectOpenOnNode =
    "SELECT id,job_id,step,kind,status,ranks,hosts,evidence,detected_at,resolved_at,origin,vkey,"
    "(SELECT c.confirmation FROM confirmations c WHERE c.vkey = coalesce(v.vkey, '#' || v.id) AND c.node = ?2) "
    "FROM verdicts v WHERE " SCOUT_SQL_OPEN_VERDICT("v", "?2") " "
    "AND (?3 = 0 OR EXISTS (SELECT 1 FROM confirmations c WHERE c.vkey = coalesce(v.vkey, '#' || v.id) "
    "  AND c.node = ?2 AND c.confirmation = 'confirmed')) "
    "AND (?1 = '[]' OR v.kind IN (SELECT value FROM json_each(?1))) "
    "AND CASE WHEN json_valid(v.hosts) THEN EXISTS (SELECT 1 FROM json_each(v.hosts) WHERE value=?2) ELSE 0 END "
    "ORDER BY v.id";
// Metrics (scout-ledgerd's /metrics).
inline constexpr const char* kCountVerdicts = "SELECT kind,status,count(*) FROM verdicts GROUP BY kind,status";
inline constexpr const char* kCountOpenByNode =
    "SELECT h.value, count(*) FROM verdicts v, json_each(CASE WHEN json_valid(v.hosts) THEN v.hosts ELSE '[]' END) h "
    "WHERE typeof(h.value)='text' AND " SCOUT_SQL_OPEN_VERDICT("v", "h.value") " "
    "GROUP BY h.value";
// A node's current state (schema 11), kept by insert_gating in the same
// transaction as the decision: the latest decision other than an error, and
// whether it left the node drained by scout (a drain or a refusal scout
// applied, not one it recorded while another tool's reason held the node:
// "; left as it is"); drains counted; the latest clear.
inline constexpr const char* kUpdateNodeState =
    "INSERT INTO node_state(node, gating_id, decision, drained, decided_at, drains, last_clear_at) "
    "VALUES(?1, CASE WHEN ?3 != 'error' THEN ?2 END, CASE WHEN ?3 != 'error' THEN ?3 END, "
    "  ?3 IN ('drain','refuse') AND ?4 NOT LIKE '%; left as it is%', CASE WHEN ?3 != 'error' THEN ?5 END, "
    "  ?3 = 'drain', CASE WHEN ?3 = 'clear' THEN ?5 END) "
    "ON CONFLICT(node) DO UPDATE SET "
    "  gating_id = CASE WHEN ?3 != 'error' THEN ?2 ELSE gating_id END, "
    "  decision = CASE WHEN ?3 != 'error' THEN ?3 ELSE decision END, "
    "  drained = CASE WHEN ?3 != 'error' THEN excluded.drained ELSE drained END, "
    "  decided_at = CASE WHEN ?3 != 'error' THEN ?5 ELSE decided_at END, "
    "  drains = drains + (?3 = 'drain'), "
    "  last_clear_at = CASE WHEN ?3 = 'clear' AND ?5 > coalesce(last_clear_at, '') THEN ?5 ELSE last_clear_at END";
// Retention: decisions decided before ?1, at most ?2 of them, except what
// a node's current state names (its latest decision and its latest clear,
// which the open-verdict rule reads).
inline constexpr const char* kPruneDecisions =
    "DELETE FROM gating WHERE id IN (SELECT g.id FROM gating g WHERE g.decided_at < ?1 AND NOT EXISTS "
    "(SELECT 1 FROM node_state s WHERE s.node = g.node AND (s.gating_id = g.id OR "
    "(g.decision = 'clear' AND s.last_clear_at = g.decided_at))) LIMIT ?2)";
inline constexpr const char* kCountDrainsByNode = "SELECT node, drains FROM node_state WHERE drains > 0";
// Every node with a decision other than an error, and whether it is drained by scout now.
inline constexpr const char* kDrainedNow = "SELECT node, drained FROM node_state WHERE gating_id IS NOT NULL";
// Every node a verdict or a decision names: open verdicts (as the prolog
// counts them), attributed verdicts and drains since ?1 (7 days) and ?2 (30
// days), and its last decision. One pass over each table, grouped by node
// (the last clear and the last decision are index seeks): no per-node scan
// of the history.
inline constexpr const char* kNodeSummaries =
    "WITH named AS (SELECT h.value AS node, v.status, v.resolved_at, v.imported_at, v.detected_at, "
    "  coalesce(v.imported_at, v.detected_at) AS at "
    "  FROM verdicts v, json_each(CASE WHEN json_valid(v.hosts) THEN v.hosts ELSE '[]' END) h "
    "  WHERE typeof(h.value) = 'text'), "
    "vs AS (SELECT x.node AS node, "
    "  sum(" SCOUT_SQL_OPEN_VERDICT("x", "x.node") ") AS open, "
    "  sum(x.status = 'attributed' AND x.at >= ?1) AS a7, sum(x.status = 'attributed' AND x.at >= ?2) AS a30 "
    "  FROM named x GROUP BY x.node), "
    "gs AS (SELECT node, sum(decision = 'drain' AND decided_at >= ?1) AS d7, "
    "  sum(decision = 'drain' AND decided_at >= ?2) AS d30 FROM gating GROUP BY node), "
    "nodes AS (SELECT node FROM vs UNION SELECT node FROM gs UNION SELECT node FROM node_state) "
    "SELECT n.node, coalesce(vs.open, 0), coalesce(vs.a7, 0), coalesce(vs.a30, 0), coalesce(gs.d7, 0), "
    " coalesce(gs.d30, 0), "
    " (SELECT decision FROM gating g WHERE g.node = n.node ORDER BY decided_at DESC, id DESC LIMIT 1), "
    " (SELECT decided_at FROM gating g WHERE g.node = n.node ORDER BY decided_at DESC, id DESC LIMIT 1) "
    "FROM nodes n LEFT JOIN vs ON vs.node = n.node LEFT JOIN gs ON gs.node = n.node ORDER BY n.node";
inline constexpr const char* kRankPids = "SELECT pid FROM ranks WHERE job_id=? ORDER BY rank";
inline constexpr const char* kInsertVerdict =
    "INSERT INTO verdicts(job_id,step,kind,status,ranks,hosts,evidence,detected_at) "
    "VALUES(?,?,?,?,?,?,?,?)";
// Idempotent on the verdict's stable key: a retried or replicated commit
// finds the row already there.
inline constexpr const char* kInsertKeyedVerdict =
    "INSERT OR IGNORE INTO verdicts(job_id,step,kind,status,ranks,hosts,evidence,detected_at,resolved_at,vkey) "
    "VALUES(?,?,?,?,?,?,?,?,?,?)";
inline constexpr const char* kVerdictIdByKey = "SELECT id FROM verdicts WHERE vkey=?";
inline constexpr const char* kResolveVerdictByKey =
    "UPDATE verdicts SET resolved_at=? WHERE vkey=? AND resolved_at IS NULL";
inline constexpr const char* kResolveVerdict =
    "UPDATE verdicts SET resolved_at=? WHERE id=? AND resolved_at IS NULL";
inline constexpr const char* kSelectVerdicts =
    "SELECT id,job_id,step,kind,status,ranks,hosts,evidence,detected_at,resolved_at,origin,vkey,confirmation "
    "FROM verdicts WHERE job_id=? ORDER BY id";
inline constexpr const char* kSelectVerdictsV5 =
    "SELECT id,job_id,step,kind,status,ranks,hosts,evidence,detected_at,resolved_at,origin,vkey,NULL "
    "FROM verdicts WHERE job_id=? ORDER BY id";
// A ledger of schema 4 or older (read-only, not migrated) has no vkey.
inline constexpr const char* kSelectVerdictsV4 =
    "SELECT id,job_id,step,kind,status,ranks,hosts,evidence,detected_at,resolved_at,origin,NULL,NULL "
    "FROM verdicts WHERE job_id=? ORDER BY id";

// Gating by verified evidence (schema 6).
inline constexpr const char* kConfirm =
    "INSERT OR REPLACE INTO confirmations(vkey,node,confirmation,decided_by,decided_at) VALUES(?1,?2,?3,?4,?5)";
inline constexpr const char* kSummariseConfirmation =
    "UPDATE verdicts SET confirmation = CASE WHEN EXISTS (SELECT 1 FROM confirmations c WHERE c.vkey=?1 "
    "AND c.confirmation='confirmed') THEN 'confirmed' ELSE 'unconfirmed' END "
    "WHERE coalesce(vkey, '#' || id) = ?1";
inline constexpr const char* kKeyOwner =
    "SELECT id, job_id, origin_uid, coalesce(origin,''), "
    "EXISTS (SELECT 1 FROM confirmations c WHERE c.vkey = v.vkey), kind, status, ranks, hosts "
    "FROM verdicts v WHERE vkey=?1";
inline constexpr const char* kReplaceByKey =
    "UPDATE verdicts SET step=?2,kind=?3,status=?4,ranks=?5,hosts=?6,evidence=?7,detected_at=?8,"
    "resolved_at=?9,origin=?10,origin_uid=?11,origin_id=NULL,imported_at=?12 WHERE vkey=?1";
inline constexpr const char* kCountVerdictsFrom = "SELECT count(*) FROM verdicts WHERE job_id=?1 AND origin_uid=?2";
inline constexpr const char* kSetJobOwner = "UPDATE jobs SET user=?2, uid=?3 WHERE job_id=?1";
// A reused job id (Ledger::renew_job): the earlier job's keyed verdicts and
// their confirmations move to retired keys, then the row is the new job's.
// A key with '@' is a retired one: submitted and imported keys never hold it.
#define SCOUT_SQL_EARLIER_KEYED "job_id=?1 AND vkey IS NOT NULL AND instr(vkey, '@') = 0"
inline constexpr const char* kRetireConfirmations =
    "UPDATE confirmations SET vkey = vkey || '@' || (SELECT v.id FROM verdicts v WHERE v.vkey = confirmations.vkey) "
    "WHERE vkey IN (SELECT vkey FROM verdicts WHERE " SCOUT_SQL_EARLIER_KEYED ")";
// Root's confirmations of the earlier job's keys that no verdict row holds.
inline constexpr const char* kDropOrphanConfirmations =
    "DELETE FROM confirmations WHERE substr(vkey, 1, length(?1) + 1) = ?1 || '.' AND instr(vkey, '@') = 0";
inline constexpr const char* kRetireVerdictKeys =
    "UPDATE verdicts SET vkey = vkey || '@' || id WHERE " SCOUT_SQL_EARLIER_KEYED;
inline constexpr const char* kRenewJob =
    "UPDATE jobs SET user=?3, uid=?4, started_at=?2, ended_at=NULL, exit_status=NULL WHERE job_id=?1";
inline constexpr const char* kSelectReference =
    "SELECT signature FROM reference_signatures WHERE device_class=?1 AND recipe=?2 AND seed=?3";
inline constexpr const char* kInsertReference =
    "INSERT OR IGNORE INTO reference_signatures(device_class,recipe,seed,signature,node,recorded_at) "
    "VALUES(?1,?2,?3,?4,?5,?6)";
// Blame of a node: distinct jobs and distinct users (the verdict's origin
// uid: the spool's owner root checked, or the uid MUNGE certified; never a
// uid a user's own rows claim) with attributed verdicts of the given kinds
// naming it, imported since ?3.
inline constexpr const char* kNodeBlame =
    "SELECT count(DISTINCT v.job_id), count(DISTINCT v.origin_uid) FROM verdicts v "
    "WHERE v.status='attributed' AND v.kind IN (SELECT value FROM json_each(?1)) "
    "AND CASE WHEN json_valid(v.hosts) THEN EXISTS (SELECT 1 FROM json_each(v.hosts) WHERE value=?2) ELSE 0 END "
    "AND coalesce(v.imported_at, v.detected_at) >= ?3";
}  // namespace scout::sql::statements
