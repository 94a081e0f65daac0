#!/bin/sh
# Rank 3 aborts: crash attributed to rank 3 on n2; scout-run returns the
# program's failure; nothing left behind.
. "$top_srcdir/tests/integration/lib.sh"
start_run -n 8 --nodes 4 --stall-threshold 2 -- "$TRAIN" --steps 300 --fault crash:rank=3:step=40
finish_run
[ "$RUN_RC" -ne 0 ] || fail "crashed job reported success"
v=$(verdicts_json)
expect_eq "crash verdicts" "$(echo "$v" | jq '[.[] | select(.kind == "crash")] | length')" 1
expect_eq "attributed verdicts" "$(echo "$v" | jq '[.[] | select(.status == "attributed")] | length')" 1
c=$(echo "$v" | jq '.[] | select(.kind == "crash")')
expect_eq "ranks" "$(echo "$c" | jq -c '.ranks')" "[3]"
expect_eq "hosts" "$(echo "$c" | jq -c '.hosts')" '["n2"]'
expect_eq "pid" "$(echo "$c" | jq '.evidence.culprits[0].pid')" "$(rank_pid 3)"
expect_eq "signal (the probe's end event)" "$(echo "$c" | jq -r '.evidence.culprits[0].signal')" SIGABRT
assert_no_leftovers
pass "crash: attributed to rank 3 on n2"
