-- scout ledger, schema version 3: replay cycles (silent-data-corruption
-- checks run beside the job) and checkpoint certification. A checkpoint is
-- trusted for recovery only after a complete clean replay cycle that started
-- after it was written, with no sdc verdict in between.
CREATE TABLE IF NOT EXISTS replay_cycles (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id      TEXT NOT NULL,
  cycle       INTEGER NOT NULL,
  started_ms  INTEGER NOT NULL,            -- Unix ms, earliest start on any node
  finished_ms INTEGER NOT NULL,            -- Unix ms, when its outcome was decided
  observers   INTEGER NOT NULL,            -- nodes that reported
  expected    INTEGER NOT NULL,            -- nodes alive when it was decided
  devices     INTEGER NOT NULL,            -- devices compared
  outcome     TEXT NOT NULL CHECK (outcome IN ('clean','dissent','incomplete')),
  cpu_s       REAL NOT NULL,               -- CPU time it cost, all nodes
  detail      TEXT NOT NULL DEFAULT '{}',  -- JSON
  UNIQUE(job_id, cycle)
);
CREATE TABLE IF NOT EXISTS checkpoints (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id      TEXT NOT NULL,
  path        TEXT NOT NULL,
  written_ms  INTEGER NOT NULL,            -- Unix ms, when it was complete
  seen_at     TEXT NOT NULL,               -- ISO-8601 UTC
  state       TEXT NOT NULL CHECK (state IN ('candidate','recovery_verified','rejected')),
  reason      TEXT NOT NULL DEFAULT '',
  updated_at  TEXT NOT NULL,
  UNIQUE(job_id, path)
);
