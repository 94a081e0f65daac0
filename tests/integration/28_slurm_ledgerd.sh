#!/bin/sh
# The site ledger service on the head (scout-ledgerd, MUNGE): a stalled rank
# 4 on n3; the deciding scoutd forwards the verdict as it happens, and
# `scoutctl query` on the login node (no spool there) shows it live through
# the service; SIGKILL of the service mid-job and a restart lose nothing and
# duplicate nothing; the epilogs record their decisions there and n3 is
# drained. MUNGE says who asks: another user can neither read nor write the
# job, nor clear a node; root's ping says root.
. "$top_srcdir/tests/integration/slurm_lib.sh"
LEDGERD=yes start_cluster
REQ=$B/tests/integration/ledgerd_request
as_nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }
expect_eq "root's role" "$("$SCOUTCTL" ping --json | jq -r .role)" root
expect_eq "nobody's role" "$(as_nobody "$SCOUTCTL" ping --json | jq -r .role)" user
srun --scout=on --mpi=pmix -N3 -n6 "$TRAIN" --steps 150 --fault stop:rank=4:step=30 > "$T/run.log" 2>&1 &
RUN_PID=$!
J=$(current_job)
# Live from the login node: its own spool has nothing, the service has it.
[ ! -e "$SPOOL/$J/$J.db" ] || fail "the login node has a spool ledger for job $J"
n=0
until [ "$("$SCOUTCTL" query "$J" --json 2>/dev/null | jq 'map(select(.kind == "stall")) | length' 2>/dev/null || echo 0)" -gt 0 ] 2>/dev/null; do
  n=$((n + 1)); [ $n -lt 150 ] || fail "no stall verdict through scout-ledgerd: $("$SCOUTCTL" query "$J" 2>&1)"; sleep 0.2
done
v=$("$SCOUTCTL" query "$J" --json)
expect_eq "ranks" "$(echo "$v" | jq -c '[.[] | select(.kind == "stall")][0].ranks')" "[4]"
expect_eq "hosts" "$(echo "$v" | jq -c '[.[] | select(.kind == "stall")][0].hosts')" '["n3"]'
# The job's user reads her own job through the service.
expect_eq "her own query" "$(as_job_user "$SCOUTCTL" query "$J" --json | jq -c '[.[] | select(.kind == "stall")][0].ranks')" "[4]"
# Another user: refused and logged, for reading and for writing.
rc=0; as_nobody "$SCOUTCTL" query "$J" > "$T/q" 2>&1 || rc=$?
expect_eq "nobody's query exit" "$rc" 2
grep -q "belongs to uid $JOB_UID, not to uid 65534" "$T/q" || fail "refusal: $(cat "$T/q")"
rc=0; as_nobody "$REQ" "{\"op\":\"submit\",\"job\":\"$J\",\"verdicts\":[{\"vkey\":\"$J.0.o9.1.1\",\"step\":\"0\",\"kind\":\"crash\",\"status\":\"attributed\",\"hosts\":[\"n1\"]}]}" > "$T/s" 2>&1 || rc=$?
expect_eq "forged submit exit" "$rc" 1
grep -q '"refused":"not_owner"' "$T/s" || fail "forged submit: $(cat "$T/s")"
grep -q "uid 65534: request refused (not_owner)" "$CL/ledgerd.log" || fail "refusal not logged: $(tail -5 "$CL/ledgerd.log")"
# SIGKILL the service mid-job and start it again: nothing lost, nothing twice.
stop_ledgerd KILL
start_ledgerd
expect_eq "stall rows after the restart" "$(sqlite3 "$CL/ledgerd.db" "select count(*) from verdicts where job_id='$J' and kind='stall'")" 1
pid=$(echo "$v" | jq '[.[] | select(.kind == "stall")][0].evidence.culprits[0].pid')
kill -CONT "$pid"
wait "$RUN_PID" || fail "the job failed after SIGCONT: $(tail -5 "$T/run.log")"
RUN_PID=
n=0
until [ "$(sqlite3 "$CL/ledgerd.db" "select count(*) from gating where job_id='$J'" 2>/dev/null || echo 0)" -ge 3 ]; do
  n=$((n + 1)); [ $n -lt 300 ] || fail "epilog decisions not in scout-ledgerd within 60 s: $(sqlite3 "$CL/ledgerd.db" "select * from gating"); slurmd: $(grep -i -h epilog "$CL"/log/slurmd.n*.log 2>/dev/null | tail -6)"; sleep 0.2
done
expect_eq "decisions" "$(sqlite3 "$CL/ledgerd.db" "select node||':'||decision from gating where job_id='$J' and decision != 'error' order by node" | tr '\n' ' ')" "n1:keep n2:keep n3:drain "
expect_eq "stall rows, exactly once" "$(sqlite3 "$CL/ledgerd.db" "select count(*) from verdicts where job_id='$J' and kind='stall'")" 1
expect_eq "n3 state" "$(node_state n3)" drained
# One verdict form whichever ledger answers: the service's answer is the
# same objects as its ledger file read directly.
"$SCOUTCTL" query "$J" --json > "$T/q_service.json"
"$SCOUTCTL" query "$J" --json --ledger "$CL/ledgerd.db" > "$T/q_file.json"
[ "$(jq length "$T/q_service.json")" -gt 0 ] || fail "no verdicts through the service"
cmp -s "$T/q_service.json" "$T/q_file.json" || fail "query --json differs by ledger: $(diff "$T/q_service.json" "$T/q_file.json" | head -20)"
expect_eq "keys of a verdict" "$(jq -c '.[0] | keys' "$T/q_service.json")" \
  '["confirmation","detected_at","evidence","hosts","id","job","kind","origin","ranks","resolved_at","status","step","vkey"]'
# From the head, for an administrator: n3's decisions (the stall itself was
# resolved when rank 4 went on, so it is not open).
expect_eq "n3's drain in the service" "$("$SCOUTCTL" node n3 --json | jq '.decisions | map(select(.decision == "drain" and .job == "'"$J"'")) | length')" 1
# Every node at a glance, for administrators only.
expect_eq "n3 in scoutctl nodes" "$("$SCOUTCTL" nodes --json | jq -c '.[] | select(.node == "n3") | [.drains_7d, .verdicts_30d, .last_decision]')" '[1,1,"drain"]'
rc=0; as_nobody "$SCOUTCTL" nodes > "$T/n" 2>&1 || rc=$?
expect_eq "nobody's nodes exit" "$rc" 2
rc=0; as_nobody "$SCOUTCTL" clear n3 --reason "I say so" > "$T/c" 2>&1 || rc=$?
expect_eq "nobody's clear exit" "$rc" 2
grep -q "for root and administrators" "$T/c" || fail "clear refusal: $(cat "$T/c")"
"$SCOUTCTL" clear n3 --reason "ran the diagnostics: clean" >/dev/null || fail "root's clear failed"
expect_eq "clear recorded" "$("$SCOUTCTL" node n3 --json | jq -r '.decisions | map(select(.decision == "clear"))[0].reason')" "ran the diagnostics: clean"
# The site's monitoring scrapes /metrics (not_admin: nobody's nodes and clear).
curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" > "$T/metrics" || fail "no /metrics"
grep -qx 'scout_drains_total{node="n3"} 1' "$T/metrics" || fail "metrics: $(cat "$T/metrics")"
grep -qx 'scout_verdicts{kind="stall",status="attributed"} 1' "$T/metrics" || fail "metrics: $(cat "$T/metrics")"
grep -qx 'scout_ledgerd_refused_total{reason="not_admin"} 2' "$T/metrics" || fail "metrics: $(cat "$T/metrics")"
if command -v promtool >/dev/null; then
  promtool check metrics < "$T/metrics" || fail "promtool: the exposition is not valid"
fi
expect_eq "any other path" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$METRICS_PORT/")" 404
pass "scout-ledgerd: live query from the login node, restart without loss, MUNGE identities enforced, n3 drained"
