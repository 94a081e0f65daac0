#!/bin/sh
# SIGTERM or SIGINT to one scoutd: it flushes, the scoutds agree to stop and
# all exit 0 (no observer_lost: nobody was lost), a verdict committed before
# stays in the ledger, and the training runs on to its normal exit.
. "$top_srcdir/tests/integration/lib.sh"

# all_scoutds_exit : every scoutd of the job (and their mpirun) is gone
# within 15 s, while scout-run still waits for the training
all_scoutds_exit() {
  n=0
  while pgrep -f -- "scoutd/scoutd --job-id $JOB " >/dev/null; do
    n=$((n + 1)); [ $n -lt 75 ] || fail "scoutds still running: $(pgrep -af -- "scoutd/scoutd --job-id $JOB ")"
    sleep 0.2
  done
}

# A stall is recorded, then SIGTERM to n3's scoutd (not the root).
start_run -n 8 --nodes 4 --stall-threshold 2 -- "$TRAIN" --steps 300 --fault stop:rank=5:step=40
p=$(scoutd_pid "$LEDGER" "$JOB" n3)
wait_for_verdict stall 20
kill -TERM "$p"
all_scoutds_exit
expect_eq "scoutds that stopped by agreement" "$(grep -c ' scoutd: n[1-4]: stopping$' "$T/run.log")" 4
grep -qi "exited on signal\|non-zero" "$T/run.log" && fail "a scoutd did not exit 0"
kill -CONT "$(rank_pid 5)"
finish_run
expect_eq "exit status (SIGTERM)" "$RUN_RC" 0
grep -q "done: 300 steps on 8 ranks" "$T/run.log" || fail "training did not finish"
expect_eq "verdicts (SIGTERM)" "$(verdicts_json | jq -c '[.[] | [.kind, .ranks]]')" '[["stall",[5]]]'
assert_no_leftovers

# SIGINT to the root observer (n1) of a healthy run.
JOB=$((JOB + 1))
start_run -n 8 --nodes 4 -- "$TRAIN" --steps 400 --step-ms 10
p=$(scoutd_pid "$LEDGER" "$JOB" n1)
sleep 1
kill -INT "$p"
all_scoutds_exit
expect_eq "scoutds that stopped by agreement (SIGINT)" "$(grep -c ' scoutd: n[1-4]: stopping$' "$T/run.log")" 4
finish_run
expect_eq "exit status (SIGINT)" "$RUN_RC" 0
grep -q "done: 400 steps on 8 ranks" "$T/run.log" || fail "training did not finish"
expect_eq "verdicts (SIGINT)" "$(verdicts_json | jq length)" 0
assert_no_leftovers
pass "scoutd signals: SIGTERM/SIGINT to one scoutd stop all of them cleanly; training unharmed; verdicts kept"
