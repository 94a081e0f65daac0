-- scout ledger, schema version 9: root's confirmations per (verdict key,
-- node). Root's epilog on node N reproduces (or not) what a verdict says of
-- N; that decides nothing about the other nodes the verdict names, so the
-- prolog of a node refuses it only for a confirmation recorded for that
-- node. The key is the verdict's vkey ('#<id>' for a row of this ledger
-- written before schema 5). verdicts.confirmation stays as a summary for
-- display ('confirmed' when any node confirmed it).
CREATE TABLE IF NOT EXISTS confirmations (
  vkey         TEXT NOT NULL,
  node         TEXT NOT NULL,
  confirmation TEXT NOT NULL CHECK (confirmation IN ('confirmed','unconfirmed')),
  decided_by   TEXT NOT NULL,
  decided_at   TEXT NOT NULL,
  PRIMARY KEY (vkey, node)
);
-- What was confirmed before: kept, for each node the row names.
INSERT OR IGNORE INTO confirmations(vkey,node,confirmation,decided_by,decided_at)
  SELECT coalesce(v.vkey, '#' || v.id), h.value, v.confirmation, 'schema 9 migration',
         coalesce(v.imported_at, v.detected_at)
  FROM verdicts v, json_each(CASE WHEN json_valid(v.hosts) THEN v.hosts ELSE '[]' END) h
  WHERE v.confirmation IN ('confirmed','unconfirmed') AND typeof(h.value) = 'text';
