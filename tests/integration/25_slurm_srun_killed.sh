#!/bin/sh
# SIGKILL of the user's srun: its companion step loses its parent and stops
# cleanly (every scoutd of the step logs a clean stop and exits), the ledger
# holds no verdict for the job, and no node is drained.
. "$top_srcdir/tests/integration/slurm_lib.sh"
start_cluster
srun --scout=on --mpi=pmix -N3 -n3 "$TRAIN" --steps 100000 --step-ms 20 > "$T/run.log" 2>&1 &
RUN_PID=$!
J=$(current_job)
PIDS=$(for node in n1 n2 n3; do node_scoutd_pid "$J" "$node"; done | tr '\n' ' ')
sleep 2
kill -KILL "$RUN_PID"
wait "$RUN_PID" 2>/dev/null || true
RUN_PID=
n=0
while :; do
  alive=
  for p in $PIDS; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
  [ -z "$alive" ] && break
  n=$((n + 1)); [ $n -lt 150 ] || fail "scoutd(s)$alive still running 30 s after srun was killed"
  sleep 0.2
done
echo "every scoutd of job $J exited $(echo "$n * 0.2" | bc) s after srun was SIGKILLed"
# Each scoutd stopped by agreement (SIGUSR1 forwarded by the companion srun),
# not by being killed: its log says so.
# Each scoutd's log is on its own node, in the job's spool directory.
stopped=$(for n in n1 n2 n3; do on "$n" sh -c "cat $SPOOL/$J/*.scoutd.log" 2>/dev/null; done | grep -c 'stopping' || true)
[ "$stopped" -ge 3 ] || fail "expected 3 scoutds to log a clean stop, found $stopped"
scancel "$J" 2>/dev/null || true
for node in n1 n2 n3; do wait_epilog "$J" "$node"; done
expect_eq "verdicts" "$("$SCOUTCTL" query "$J" --json | jq -c '[.[] | .kind + " " + (.ranks | tostring)]')" "[]"
for node in n1 n2 n3; do
  s=$(node_state "$node")
  case "$s" in drain*) fail "$node drained after srun was killed: $(node_reason "$node")" ;; esac
done
pass "slurm srun killed: companion stopped cleanly, no verdict, no drain"
