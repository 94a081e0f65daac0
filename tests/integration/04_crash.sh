#!/bin/sh
# Rank 3 aborts: crash attributed to rank 3 on n2; scout-run returns the
# program's failure; nothing left behind. The user's stop (Ctrl-C to
# scout-run) reaches every scoutd before the program's SIGINT; a rank that
# dies first after that notice is no crash.
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

# The user stops a job (Ctrl-C to scout-run): every scoutd hears of it
# before the program's SIGINT.
next_job
start_run -n 4 --nodes 4 --stall-threshold 2 -- "$TRAIN" --steps 100000
wait_attached() {
  n=0
  until [ "$(sqlite3 "$LEDGER" "select count(*) from ranks where job_id='$JOB'" 2>/dev/null || echo 0)" -ge 4 ]; do
    n=$((n + 1)); [ $n -lt 150 ] || fail "the ranks never attached: $(tail -5 "$T/run.log")"; sleep 0.2
  done
}
heard() { grep -c 'the launcher is stopping the job' "$T/run.log" || true; }
wait_attached
kill -INT "$RUN_PID"; finish_run
[ "$RUN_RC" -ne 0 ] || fail "a stopped job reported success"
expect_eq "scoutds told of the user's stop" "$(heard)" 4
expect_eq "verdicts of a stopped job" "$(verdicts_json | jq -c '[.[] | .kind]')" '[]'

# After that notice (given here directly, as scout-run gives it), rank 3
# dies a second or more before the others: no crash (named without the notice).
next_job
start_run -n 4 --nodes 4 --stall-threshold 2 -- "$TRAIN" --steps 100000
wait_attached
for node in n1 n2 n3 n4; do kill -USR2 "$(scoutd_pid "$LEDGER" "$JOB" "$node")"; done
n=0
until [ "$(heard)" -ge 4 ]; do
  n=$((n + 1)); [ $n -lt 100 ] || fail "the scoutds never heard of the stop: $(grep -v '^step' "$T/run.log" | tail -5)"; sleep 0.05
done
kill -KILL "$(rank_pid 3)" || fail "rank 3 was gone already"
sleep 3  # outside Slurm a crash is named in the next round
expect_eq "verdicts after a stop notice and rank 3's death" "$(verdicts_json | jq -c '[.[] | [.kind, .ranks]]')" '[]'
stop_run
assert_no_leftovers
pass "crash: attributed to rank 3 on n2; a stopped job's deaths, the first one too, are no crash"
