#!/bin/sh
# SIGSTOP of rank 5: one stall verdict naming rank 5, host n3 and its pid,
# within the stall threshold + 2 s; the others are named as waiting;
# scoutctl status answers while the job is stopped; SIGCONT resolves it.
. "$top_srcdir/tests/integration/lib.sh"
THRESH=2
start_run -n 8 --nodes 4 --stall-threshold $THRESH -- "$TRAIN" --steps 300 --fault stop:rank=5:step=40
# The moment the fault happens: rank 5's process enters state T.
n=0
while :; do
  pid=$(rank_pid 5 2>/dev/null || true)
  if [ -n "$pid" ] && [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = T ]; then break; fi
  n=$((n + 1)); [ $n -lt 300 ] || fail "rank 5 never stopped"
  sleep 0.1
done
t_fault=$(date +%s.%N)
wait_for_verdict stall $((THRESH + 10))
t_seen=$(date +%s.%N)
delay=$(echo "$t_seen - $t_fault" | bc)
echo "stall verdict seen ${delay}s after the fault (threshold ${THRESH}s)"
[ "$(echo "$delay <= $THRESH + 2 + 0.5" | bc)" = 1 ] || fail "verdict took ${delay}s; expected at most threshold + 2 s"
v=$(verdicts_json)
expect_eq "verdict count" "$(echo "$v" | jq length)" 1
expect_eq "kind" "$(echo "$v" | jq -r '.[0].kind')" stall
expect_eq "status" "$(echo "$v" | jq -r '.[0].status')" attributed
expect_eq "ranks" "$(echo "$v" | jq -c '.[0].ranks')" "[5]"
expect_eq "hosts" "$(echo "$v" | jq -c '.[0].hosts')" '["n3"]'
expect_eq "pid" "$(echo "$v" | jq '.[0].evidence.culprits[0].pid')" "$pid"
expect_eq "process state" "$(echo "$v" | jq -r '.[0].evidence.culprits[0].state')" T
expect_eq "waiting ranks" "$(echo "$v" | jq -c '.[0].evidence.waiting')" "[0,1,2,3,4,6,7]"
# Text output names it too.
"$SCOUTCTL" query "$JOB" | grep -E "stall +attributed +5 +n3" >/dev/null || fail "text query: $("$SCOUTCTL" query "$JOB")"
# Live view while the training is stopped.
st=$("$SCOUTCTL" status "$JOB") || fail "scoutctl status failed while the job is stopped"
echo "$st" | grep -E "^ +5 +$pid .*stopped \(T\)" >/dev/null || fail "status does not show rank 5 stopped: $st"
expect_eq "status json ranks" "$("$SCOUTCTL" status "$JOB" --json | jq '.ranks | length')" 8
# Resume: the job finishes normally and the incident is resolved.
kill -CONT "$pid"
finish_run
expect_eq "exit status" "$RUN_RC" 0
v=$(verdicts_json)
expect_eq "verdicts after resume" "$(echo "$v" | jq length)" 1
[ "$(echo "$v" | jq -r '.[0].resolved_at')" != null ] || fail "stall not resolved after SIGCONT"
assert_no_leftovers
pass "stop: stall attributed to rank 5 on n3"
