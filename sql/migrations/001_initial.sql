-- scout ledger, schema version 1. Every statement is idempotent; the
-- migration driver sets PRAGMA user_version = 1 after it, in one transaction.
CREATE TABLE IF NOT EXISTS jobs (
  job_id      TEXT PRIMARY KEY,           -- Slurm job id or scout-run id
  user        TEXT NOT NULL,
  uid         INTEGER NOT NULL,
  launcher    TEXT NOT NULL,              -- 'scout-run' or 'slurm'
  command     TEXT NOT NULL DEFAULT '',
  nodes       INTEGER NOT NULL DEFAULT 0,
  ranks       INTEGER NOT NULL DEFAULT 0,
  started_at  TEXT NOT NULL,              -- ISO-8601 UTC
  ended_at    TEXT,
  exit_status INTEGER
);
CREATE TABLE IF NOT EXISTS nodes (
  job_id      TEXT NOT NULL REFERENCES jobs(job_id),
  node        TEXT NOT NULL,              -- host name (simulated under scout-run)
  scoutd_pid  INTEGER NOT NULL,
  first_rank  INTEGER NOT NULL,
  last_rank   INTEGER NOT NULL,
  joined_at   TEXT NOT NULL,
  PRIMARY KEY (job_id, node)
);
CREATE TABLE IF NOT EXISTS ranks (
  job_id      TEXT NOT NULL REFERENCES jobs(job_id),
  step        TEXT NOT NULL,
  rank        INTEGER NOT NULL,
  node        TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  PRIMARY KEY (job_id, step, rank)
);
CREATE TABLE IF NOT EXISTS verdicts (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id      TEXT NOT NULL REFERENCES jobs(job_id),
  step        TEXT NOT NULL,
  kind        TEXT NOT NULL CHECK (kind IN ('hang','stall','crash','divergence',
                'straggler','sdc','observer_lost','telemetry_anomaly','transient')),
  status      TEXT NOT NULL CHECK (status IN ('attributed','inconclusive','advisory')),
  ranks       TEXT NOT NULL DEFAULT '[]', -- JSON array of culprit world ranks
  hosts       TEXT NOT NULL DEFAULT '[]', -- JSON array of culprit hosts
  evidence    TEXT NOT NULL DEFAULT '{}', -- JSON object: gathered values
  detected_at TEXT NOT NULL,              -- ISO-8601 UTC
  resolved_at TEXT                        -- set when progress resumed
);
CREATE INDEX IF NOT EXISTS verdicts_by_job ON verdicts(job_id, detected_at);
