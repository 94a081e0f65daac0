#!/bin/sh
# Retune a running job: scoutctl set JOB key=value goes to one scoutd, the
# deciding observer applies it at a round boundary, every observer adopts
# it (logged), the ledger records it with who set it, scoutctl status shows
# the values in force, and the new stall threshold is the one a stall is
# judged by. Bad keys and values get a clear error (exit 2); another user
# is refused; learn=on is refused when the learner was not started.
. "$top_srcdir/tests/integration/lib.sh"
next_job
start_run -n 4 --nodes 2 --stall-threshold 30 --scoutd-arg=--learn=off -- "$TRAIN" --steps 100000 --step-ms 5
until [ -n "$(rank_pid 3 2>/dev/null)" ]; do sleep 0.1; done
sleep 1
expect_eq "threshold before" "$("$SCOUTCTL" status "$JOB" --json | jq '.settings.stall_threshold')" 30

"$SCOUTCTL" set "$JOB" stall_threshold=2 straggler_confirmations=5 > "$T/set.out" || fail "scoutctl set failed: $(cat "$T/set.out")"
cat "$T/set.out"
grep -q "^job $JOB: stall_threshold 30 -> 2 (settings version 1, set by root)$" "$T/set.out" || fail "set output: $(cat "$T/set.out")"
grep -q "straggler_confirmations 3 -> 5" "$T/set.out" || fail "set output: $(cat "$T/set.out")"
st=$("$SCOUTCTL" status "$JOB" --json)
expect_eq "threshold in force" "$(echo "$st" | jq '.settings.stall_threshold')" 2
expect_eq "confirmations in force" "$(echo "$st" | jq '.settings.straggler_confirmations')" 5
expect_eq "settings version" "$(echo "$st" | jq '.settings.version')" 1
# Every observer adopted it, at a round boundary.
n=0; until [ "$(grep -c 'settings version 1 in force: stall_threshold 30 -> 2' "$T/run.log")" = 2 ]; do
  n=$((n + 1)); [ $n -lt 50 ] || fail "not adopted by both observers: $(grep settings "$T/run.log")"; sleep 0.1; done
# The ledger: one row per key, with who set it and through which node.
expect_eq "ledger rows" "$(sqlite3 "$LEDGER" "select key||':'||old_value||'->'||new_value||':'||set_by||':'||set_by_uid from settings where job_id='$JOB' order by key" | tr '\n' ' ')" \
  "stall_threshold:30->2:root:0 straggler_confirmations:3->5:root:0 "

# Bad input: exit 2 and what was expected; nothing changes.
expect_error 2 "stall_threshold=0: expected seconds from 1 to 86400" "$SCOUTCTL" set "$JOB" stall_threshold=0
expect_error 2 "unknown setting 'bogus'; expected one of stall_threshold" "$SCOUTCTL" set "$JOB" bogus=1
expect_error 2 "expected key=value" "$SCOUTCTL" set "$JOB" stall_threshold
expect_error 2 "learn=on: expected|learner was not started" "$SCOUTCTL" set "$JOB" learn=on
expect_error 2 "set: expected key=value after the job id" "$SCOUTCTL" set "$JOB"
# Another user: the job's scoutds do not answer.
if command -v setpriv >/dev/null; then
  rc=0; setpriv --reuid=nobody --regid=nogroup --clear-groups "$SCOUTCTL" set "$JOB" stall_threshold=5 \
    > "$T/out" 2> "$T/err" || rc=$?
  [ "$rc" -ne 0 ] || fail "another user retuned the job: $(cat "$T/out")"
fi
expect_eq "version after refusals" "$("$SCOUTCTL" status "$JOB" --json | jq '.settings.version')" 1

# The new threshold is the one the stall is judged by: a rank stopped now is
# named although the job started with 30 s.
kill -STOP "$(rank_pid 1)"
wait_for_verdict stall 15
expect_verdict stall "[1]" '["n1"]'
stop_run
assert_no_leftovers
pass "scoutctl set: applied at a round boundary, adopted by every observer, recorded with who set it, in force for the next stall; bad input and other users refused"
