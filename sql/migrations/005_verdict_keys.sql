-- scout ledger, schema version 5: a stable key per verdict, so that the same
-- verdict written on several nodes (every scoutd keeps the job's verdicts in
-- its node-local spool) or imported from several spools is one row.
-- vkey = <job>.<step>.o<deciding observer>.<its pid>.<sequence>; NULL for
-- rows written before version 5.
ALTER TABLE verdicts ADD COLUMN vkey TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS verdicts_by_vkey ON verdicts(vkey) WHERE vkey IS NOT NULL;
