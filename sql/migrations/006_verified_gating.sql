-- scout ledger, schema version 6: gating by evidence root has checked.
-- A stall, crash or hang verdict makes a node 'suspect' (recorded, shown by
-- scoutctl node); it is drained only when root's own node check fails or
-- enough distinct jobs and users blamed it. An sdc verdict is drained only
-- when root's re-run reproduces it; otherwise the decision says 'not
-- reproduced' and the verdict is marked unconfirmed. Each decision keeps, as
-- JSON, the evidence root checked and its result. reference_signatures keeps
-- the signature of each replay recipe and seed per device class, from root's
-- own clean runs (never from a user's process).
CREATE TABLE gating_v6 (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id      TEXT,
  node        TEXT NOT NULL,
  decision    TEXT NOT NULL CHECK (decision IN ('drain','keep','error','refuse','clear','suspect')),
  reason      TEXT NOT NULL,
  decided_by  TEXT NOT NULL,
  decided_at  TEXT NOT NULL,
  evidence    TEXT NOT NULL DEFAULT '{}'  -- what root checked, and the result (JSON)
);
INSERT INTO gating_v6(id,job_id,node,decision,reason,decided_by,decided_at)
  SELECT id,job_id,node,decision,reason,decided_by,decided_at FROM gating;
DROP TABLE gating;
ALTER TABLE gating_v6 RENAME TO gating;
CREATE INDEX IF NOT EXISTS gating_by_node ON gating(node, decided_at);
CREATE INDEX IF NOT EXISTS gating_by_job ON gating(job_id);
-- NULL: not checked by root; 'confirmed': root reproduced it; 'unconfirmed':
-- root's check did not.
ALTER TABLE verdicts ADD COLUMN confirmation TEXT;
CREATE TABLE IF NOT EXISTS reference_signatures (
  device_class TEXT NOT NULL,
  recipe       TEXT NOT NULL,
  seed         TEXT NOT NULL,            -- hex
  signature    TEXT NOT NULL,            -- hex
  node         TEXT NOT NULL,            -- the node whose clean run set it
  recorded_at  TEXT NOT NULL,
  PRIMARY KEY (device_class, recipe, seed)
);
