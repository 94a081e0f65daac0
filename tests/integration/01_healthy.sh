#!/bin/sh
# A healthy 300-step run: normal exit, zero verdicts, nothing left behind.
. "$top_srcdir/tests/integration/lib.sh"
start_run -n 8 --nodes 4 --stall-threshold 2 -- "$TRAIN" --steps 300
finish_run
expect_eq "exit status" "$RUN_RC" 0
grep -q "done: 300 steps on 8 ranks" "$T/run.log" || fail "training did not finish"
expect_eq "verdicts" "$(verdicts_json | jq length)" 0
"$SCOUTCTL" query "$JOB" | grep -q "no verdicts" || fail "text query does not say 'no verdicts'"
expect_eq "ranks observed" "$(sqlite3 "$LEDGER" "select count(*) from ranks where job_id='$JOB'")" 8
expect_eq "recorded exit" "$(sqlite3 "$LEDGER" "select exit_status from jobs where job_id='$JOB'")" 0
assert_no_leftovers
pass "healthy run: no verdicts"
