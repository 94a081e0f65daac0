-- scout ledger, schema version 4: node health decisions beyond the epilog's.
-- The prolog refuses a node that has an open attributed verdict of a kind the
-- site gates on (default sdc) and records 'refuse'; an administrator records
-- 'clear' (scoutctl clear NODE --reason ...) after repairing or testing the
-- node, which closes every verdict on it detected or imported before then.
-- A clear belongs to no job: job_id is NULL for it. SQLite cannot change a
-- CHECK constraint in place, so the table is copied.
CREATE TABLE gating_v4 (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id      TEXT,                       -- NULL for node-level decisions (clear)
  node        TEXT NOT NULL,
  decision    TEXT NOT NULL CHECK (decision IN ('drain','keep','error','refuse','clear')),
  reason      TEXT NOT NULL,
  decided_by  TEXT NOT NULL,              -- program, user and uid that decided
  decided_at  TEXT NOT NULL               -- ISO-8601 UTC
);
INSERT INTO gating_v4(id,job_id,node,decision,reason,decided_by,decided_at)
  SELECT id,job_id,node,decision,reason,decided_by,decided_at FROM gating;
DROP TABLE gating;
ALTER TABLE gating_v4 RENAME TO gating;
CREATE INDEX IF NOT EXISTS gating_by_node ON gating(node, decided_at);
CREATE INDEX IF NOT EXISTS gating_by_job ON gating(job_id);
