-- scout ledger, schema version 10: settings retuned while a job runs
-- (scoutctl set JOB key=value). One row per key per applied request: the
-- settings version the deciding observer gave it, the old and the new value,
-- who asked (uid and name, from the control socket's peer credentials) and
-- through which node's scoutd. Every observer records the change it adopts;
-- the key makes those replicas one row.
CREATE TABLE IF NOT EXISTS settings (
  id          INTEGER PRIMARY KEY,
  job_id      TEXT NOT NULL,
  step        TEXT NOT NULL,
  version     INTEGER NOT NULL,
  key         TEXT NOT NULL,
  old_value   TEXT NOT NULL,
  new_value   TEXT NOT NULL,
  set_by_uid  INTEGER NOT NULL,
  set_by      TEXT NOT NULL,
  via_node    TEXT NOT NULL,
  set_at      TEXT NOT NULL,
  UNIQUE (job_id, step, version, key)
);
