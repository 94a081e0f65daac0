#!/bin/sh
# Ranks are not always Slurm tasks: `sbatch --scout=on` whose script runs
# Open MPI's mpirun (Slurm starts one orted per node, the ranks are its
# children, two per node). Every scoutd observes the ranks that actually run
# on its node, whatever launched them: rank 4, stopped, is named on its node
# with the stall verdict, and that node is drained by its own epilog.
. "$top_srcdir/tests/integration/slurm_lib.sh"
start_cluster
cat > "$CL/job.sh" <<JOB
#!/bin/sh
#SBATCH --scout=on
#SBATCH -N3 -n6
#SBATCH -o $CL/job.out
mpirun --allow-run-as-root -np 6 --map-by node "$TRAIN" --steps 150 --fault stop:rank=4:step=30
echo "mpirun exit \$?"
JOB
J=$(sbatch --parsable "$CL/job.sh") || fail "sbatch failed"
# --map-by node: ranks 0 3 on n1, 1 4 on n2, 2 5 on n3.
# Read on n2: its spool holds the verdict a round or two after n1's does.
wait_job_verdict "$J" stall 60 n1
wait_job_verdict "$J" stall 10 n2
v=$(query_on n2 "$J" --json)
expect_eq "verdicts" "$(echo "$v" | jq length)" 1
expect_eq "ranks" "$(echo "$v" | jq -c '.[0].ranks')" "[4]"
expect_eq "hosts" "$(echo "$v" | jq -c '.[0].hosts')" '["n2"]'
expect_eq "status" "$(echo "$v" | jq -r '.[0].status')" attributed
# Each node's scoutd observed the two ranks mpirun placed there.
step=$(echo "$v" | jq -r '.[0].step')
for n in n1 n2 n3; do
  c=0
  until [ "$c" -eq 2 ]; do
    c=$(on "$n" sqlite3 -readonly "$SPOOL/$J/$J.db" "select count(*) from ranks where job_id='$J' and step='$step'" 2>/dev/null || echo 0)
    [ "$c" -eq 2 ] || { sleep 0.2; }
    k=$((${k:-0} + 1)); [ "$k" -lt 100 ] || fail "$n observed $c ranks of step $step; expected 2"
  done
done
pid=$(echo "$v" | jq '.[0].evidence.culprits[0].pid')
kill -CONT "$pid"
wait_job_end "$J"
grep -q "done: 150 steps on 6 ranks" "$CL/job.out" || fail "training did not finish: $(cat "$CL/job.out")"
for node in n1 n2 n3; do wait_epilog "$J" "$node"; done
expect_eq "n2 state" "$(node_state n2)" drained
expect_eq "n2 reason" "$(node_reason n2)" "scout: stall rank 4 job $J"
expect_eq "n1 state" "$(node_state n1)" idle
expect_eq "n3 state" "$(node_state n3)" idle
pass "sbatch + mpirun: rank 4 named on n2 by the scoutd that saw mpirun's ranks; n2 drained"
