-- scout ledger, schema version 2: provenance of imported verdicts (the
-- epilog copies each job's spool ledger, written by the user's scoutds, into
-- the root-owned site ledger) and the audit of epilog health-gating decisions.
ALTER TABLE verdicts ADD COLUMN origin TEXT;         -- e.g. spool file the row came from
ALTER TABLE verdicts ADD COLUMN origin_id INTEGER;   -- its id there
ALTER TABLE verdicts ADD COLUMN origin_uid INTEGER;  -- owner of that file
ALTER TABLE verdicts ADD COLUMN imported_at TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS verdicts_by_origin ON verdicts(job_id, origin, origin_id);
CREATE TABLE IF NOT EXISTS gating (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id      TEXT NOT NULL,
  node        TEXT NOT NULL,
  decision    TEXT NOT NULL CHECK (decision IN ('drain','keep','error')),
  reason      TEXT NOT NULL,
  decided_by  TEXT NOT NULL,              -- program, user and uid that decided
  decided_at  TEXT NOT NULL               -- ISO-8601 UTC
);
CREATE INDEX IF NOT EXISTS gating_by_node ON gating(node, decided_at);
