-- scout ledger, schema version 8: two GPU verdict kinds: 'gpu_hang' (a GPU
-- stopped executing the operations its host issued while the other ranks'
-- GPUs wait inside the next one) and 'gpu_health' (a GPU's own health
-- counters: ECC, row remapping, XID, NVLink, temperature), and a replay
-- cycle outcome 'gpu_error'. SQLite cannot
-- change a CHECK constraint in place: the table is rebuilt with every column
-- and index it had, ids kept.
CREATE TABLE verdicts_v8 (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id      TEXT NOT NULL REFERENCES jobs(job_id),
  step        TEXT NOT NULL,
  kind        TEXT NOT NULL CHECK (kind IN ('hang','stall','crash','divergence',
                'straggler','sdc','observer_lost','telemetry_anomaly','transient','abort','deadlock',
                'gpu_hang','gpu_health')),
  status      TEXT NOT NULL CHECK (status IN ('attributed','inconclusive','advisory')),
  ranks       TEXT NOT NULL DEFAULT '[]',
  hosts       TEXT NOT NULL DEFAULT '[]',
  evidence    TEXT NOT NULL DEFAULT '{}',
  detected_at TEXT NOT NULL,
  resolved_at TEXT,
  origin      TEXT,
  origin_id   INTEGER,
  origin_uid  INTEGER,
  imported_at TEXT,
  vkey        TEXT,
  confirmation TEXT
);
INSERT INTO verdicts_v8(id,job_id,step,kind,status,ranks,hosts,evidence,detected_at,resolved_at,
                        origin,origin_id,origin_uid,imported_at,vkey,confirmation)
  SELECT id,job_id,step,kind,status,ranks,hosts,evidence,detected_at,resolved_at,
         origin,origin_id,origin_uid,imported_at,vkey,confirmation FROM verdicts;
DROP TABLE verdicts;
ALTER TABLE verdicts_v8 RENAME TO verdicts;
CREATE INDEX IF NOT EXISTS verdicts_by_job ON verdicts(job_id, detected_at);
CREATE UNIQUE INDEX IF NOT EXISTS verdicts_by_origin ON verdicts(job_id, origin, origin_id);
CREATE UNIQUE INDEX IF NOT EXISTS verdicts_by_vkey ON verdicts(vkey) WHERE vkey IS NOT NULL;
-- A replay cycle whose GPU could not run its recipes is neither clean nor a
-- dissent: 'gpu_error' (it certifies no checkpoint).
CREATE TABLE replay_cycles_v8 (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id      TEXT NOT NULL,
  cycle       INTEGER NOT NULL,
  started_ms  INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  observers   INTEGER NOT NULL,
  expected    INTEGER NOT NULL,
  devices     INTEGER NOT NULL,
  outcome     TEXT NOT NULL CHECK (outcome IN ('clean','dissent','incomplete','gpu_error')),
  cpu_s       REAL NOT NULL,
  detail      TEXT NOT NULL DEFAULT '{}',
  UNIQUE(job_id, cycle)
);
INSERT INTO replay_cycles_v8(id,job_id,cycle,started_ms,finished_ms,observers,expected,devices,outcome,cpu_s,detail)
  SELECT id,job_id,cycle,started_ms,finished_ms,observers,expected,devices,outcome,cpu_s,detail FROM replay_cycles;
DROP TABLE replay_cycles;
ALTER TABLE replay_cycles_v8 RENAME TO replay_cycles;
