-- scout ledger, schema version 11: a node's current gating state as data.
-- /metrics and `scoutctl nodes` read one row per node here instead of
-- searching the whole decision history for each node's latest decision (a
-- scrape was quadratic in a node's history: 63 s on 60 nodes x 500 jobs,
-- under the service's lock). Ledger::insert_gating keeps it, in the same
-- transaction as the decision; retention may delete old decisions, never
-- this row. The index makes "the node's last clear" (the open-verdict rule)
-- one seek.
CREATE INDEX IF NOT EXISTS gating_by_node_decision ON gating(node, decision, decided_at);
CREATE TABLE IF NOT EXISTS node_state (
  node          TEXT PRIMARY KEY,
  gating_id     INTEGER,                 -- the latest decision other than 'error' (NULL: none)
  decision      TEXT,                    -- its decision
  drained       INTEGER NOT NULL DEFAULT 0, -- 1: it left the node drained by scout
  decided_at    TEXT,
  drains        INTEGER NOT NULL DEFAULT 0, -- drain decisions ever recorded
  last_clear_at TEXT                     -- the latest clear's decided_at
);
INSERT OR REPLACE INTO node_state(node, gating_id, decision, drained, decided_at, drains, last_clear_at)
  SELECT n.node, g.id, g.decision,
         coalesce(g.decision IN ('drain','refuse') AND g.reason NOT LIKE '%; left as it is%', 0), g.decided_at,
         (SELECT count(*) FROM gating d WHERE d.node = n.node AND d.decision = 'drain'),
         (SELECT max(c.decided_at) FROM gating c WHERE c.node = n.node AND c.decision = 'clear')
  FROM (SELECT node, max(CASE WHEN decision != 'error' THEN id END) AS last_id FROM gating GROUP BY node) n
  LEFT JOIN gating g ON g.id = n.last_id;
-- What one submitter stored (the service's per-user byte quota) is summed
-- through this index, not by scanning every verdict.
CREATE INDEX IF NOT EXISTS verdicts_by_origin_uid ON verdicts(origin_uid, job_id);
-- Retention finds old decisions by time.
CREATE INDEX IF NOT EXISTS gating_by_time ON gating(decided_at);
