#!/bin/sh
# Rank 3 aborts: crash attributed to rank 3 on n2; scout-run returns the
# program's failure; nothing left behind. Then the user stops a healthy job
# (Ctrl-C to scout-run) and its rank 3 dies a second before the others: no
# crash verdict (the scoutds heard of the stop first).
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

JOB=$((JOB + 1))
start_run -n 4 --nodes 4 --stall-threshold 2 -- "$TRAIN" --steps 100000
n=0
until [ "$(sqlite3 "$LEDGER" "select count(*) from ranks where job_id='$JOB'" 2>/dev/null || echo 0)" -ge 4 ]; do
  n=$((n + 1)); [ $n -lt 150 ] || fail "the ranks never attached: $(tail -5 "$T/run.log")"; sleep 0.2
done
sleep 1
pid3=$(rank_pid 3)
kill -INT "$RUN_PID"
# Once every scoutd has heard that the job is being stopped, rank 3 goes
# first (as a rank that notices its launcher leaving does), a second or so
# before scout-run's SIGKILL reaches the others.
n=0
until [ "$(grep -c 'the launcher is stopping the job' "$T/run.log")" -ge 4 ]; do
  n=$((n + 1)); [ $n -lt 100 ] || fail "the scoutds never heard of the stop: $(grep -v '^step' "$T/run.log" | tail -5)"; sleep 0.05
done
kill -KILL "$pid3"
finish_run
[ "$RUN_RC" -ne 0 ] || fail "a stopped job reported success"
expect_eq "verdicts after a stop whose rank 3 died first" "$(verdicts_json | jq -c '[.[] | [.kind, .ranks]]')" '[]'
assert_no_leftovers
pass "crash: attributed to rank 3 on n2; a stopped job's first death is no crash"
