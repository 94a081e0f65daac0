#!/bin/sh
# SIGKILL of the companion scoutd on one node: the job completes normally and
# an observer_lost verdict names that node.
. "$top_srcdir/tests/integration/slurm_lib.sh"
start_cluster
srun --scout=on --mpi=pmix -N3 -n3 "$TRAIN" --steps 400 --step-ms 20 > "$T/run.log" 2>&1 &
RUN_PID=$!
J=$(current_job)
p=$(node_scoutd_pid "$J" n2)
sleep 1
kill -KILL "$p"
wait "$RUN_PID" || fail "the job failed: $(tail -5 "$T/run.log")"
RUN_PID=
grep -q "done: 400 steps on 3 ranks" "$T/run.log" || fail "training did not finish"
for n in n1 n2 n3; do wait_epilog "$J" "$n"; done
# n2's own spool lacks it (its scoutd died); n1's and n3's have it, and
# their epilogs brought it to the site ledger.
v=$("$SCOUTCTL" query "$J" --json)
expect_eq "kinds" "$(echo "$v" | jq -c '[.[].kind]')" '["observer_lost"]'
expect_eq "hosts" "$(echo "$v" | jq -c '.[0].hosts')" '["n2"]'
expect_eq "n2 state" "$(node_state n2)" idle
pass "slurm observer_lost: job completed, n2 named, not drained"
