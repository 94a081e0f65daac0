#!/bin/sh
# Rank 2 spins before its next collective: hang attributed to rank 2 on n2;
# Ctrl-C then stops the hung job and leaves nothing behind.
. "$top_srcdir/tests/integration/lib.sh"
start_run -n 8 --nodes 4 --stall-threshold 2 -- "$TRAIN" --steps 300 --fault hang:rank=2:step=25
wait_for_verdict hang 30
v=$(verdicts_json)
expect_eq "verdict count" "$(echo "$v" | jq length)" 1
expect_eq "status" "$(echo "$v" | jq -r '.[0].status')" attributed
expect_eq "ranks" "$(echo "$v" | jq -c '.[0].ranks')" "[2]"
expect_eq "hosts" "$(echo "$v" | jq -c '.[0].hosts')" '["n2"]'
expect_eq "process state" "$(echo "$v" | jq -r '.[0].evidence.culprits[0].state')" R
kill -INT "$RUN_PID"
finish_run
[ "$RUN_RC" -ne 0 ] || fail "an interrupted run reported success"
assert_no_leftovers
sleep 0.5  # orphans are reaped by init
for r in 0 1 2 3 4 5 6 7; do
  p=$(rank_pid $r)
  st=$(ps -o stat= -p "$p" 2>/dev/null || true)
  case "$st" in ""|Z*) ;; *) fail "rank $r (pid $p, state $st) left after Ctrl-C" ;; esac
done
pass "hang: attributed to rank 2 on n2, Ctrl-C cleans up"
