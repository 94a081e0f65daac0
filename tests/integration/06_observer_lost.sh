#!/bin/sh
# SIGKILL of the scoutd of node n2 mid-run: the training finishes with its
# normal exit code, the surviving observers keep completing rounds and an
# observer_lost verdict names n2.
. "$top_srcdir/tests/integration/lib.sh"
start_run -n 8 --nodes 4 --stall-threshold 2 -- "$TRAIN" --steps 300 --step-ms 25
p=$(scoutd_pid "$LEDGER" "$JOB" n2)
sleep 1
kill -KILL "$p"
wait_for_verdict observer_lost 20
finish_run
expect_eq "exit status" "$RUN_RC" 0
grep -q "done: 300 steps on 8 ranks" "$T/run.log" || fail "training did not finish"
v=$(verdicts_json)
expect_eq "verdict count" "$(echo "$v" | jq length)" 1
expect_eq "hosts" "$(echo "$v" | jq -c '.[0].hosts')" '["n2"]'
expect_eq "unobserved ranks" "$(echo "$v" | jq -c '.[0].ranks')" "[2,3]"
expect_eq "scoutd pid" "$(echo "$v" | jq '.[0].evidence.scoutd_pid')" "$p"
assert_no_leftovers
pass "observer_lost: n2 named, training finished normally"
