#!/bin/sh
# sbatch --scout=on reaches every srun of the script: a healthy step and a
# crashing step; verdicts only for the crashing step. --scout-ckpt-dir reaches
# the scoutds: a checkpoint written during the healthy step is a candidate.
. "$top_srcdir/tests/integration/slurm_lib.sh"
start_cluster
mkdir -p "$CL/ckpt"
chmod 0777 "$CL/ckpt"
cat > "$CL/job.sh" <<JOB
#!/bin/sh
#SBATCH --scout=on
#SBATCH --scout-ckpt-dir=$CL/ckpt
#SBATCH -N3 -n6
#SBATCH -o $CL/job.out
# The checkpoint is written while the step is observed: once this node's
# ranks of step 0 published their records (they start after the companion
# is up), not at a fixed time that a loaded host may reach before the
# scoutds watch the directory.
( until ls /dev/shm/scout.\$SLURM_JOB_ID.0.* >/dev/null 2>&1; do sleep 0.2; done
  mkdir "$CL/ckpt/step-1"; echo w > "$CL/ckpt/step-1/model.bin" ) &
srun --mpi=pmix "$TRAIN" --steps 80 --step-ms 150
srun --mpi=pmix "$TRAIN" --steps 200 --fault crash:rank=3:step=30
echo "script done"
JOB
J=$(sbatch --parsable "$CL/job.sh") || fail "sbatch failed"
wait_job_end "$J"
grep -q "done: 80 steps on 6 ranks" "$CL/job.out" || fail "healthy step did not run: $(cat "$CL/job.out")"
for n in n1 n2 n3; do wait_epilog "$J" "$n"; done
# From the login node: the site ledger, where every node's epilog imported.
v=$("$SCOUTCTL" query "$J" --json)
expect_eq "verdicts" "$(echo "$v" | jq length)" 1
expect_eq "kind" "$(echo "$v" | jq -r '.[0].kind')" crash
# Step ids: 0 healthy, then its companion, then the crashing one and its
# companion (2 and 3; one more each time a loaded node's companion had to be
# started again): ranks in two steps, the verdict in the second.
steps=$(on n2 sqlite3 -readonly "$SPOOL/$J/$J.db" "select group_concat(step) from (select distinct step from ranks where job_id='$J' order by step)")
expect_eq "first step with ranks" "${steps%%,*}" 0
expect_eq "steps with ranks" "$(echo "$steps" | tr ',' '\n' | wc -l)" 2
expect_eq "step" "$(echo "$v" | jq -r '.[0].step')" "${steps#*,}"
expect_eq "ranks" "$(echo "$v" | jq -c '.[0].ranks')" "[3]"
expect_eq "hosts" "$(echo "$v" | jq -c '.[0].hosts')" '["n2"]'
expect_eq "n2 reason" "$(node_reason n2)" "scout: crash rank 3 job $J"
ck=$("$SCOUTCTL" checkpoints "$J" --json)
expect_eq "checkpoint" "$(echo "$ck" | jq -r '.[0].path + " " + .[0].state')" "$CL/ckpt/step-1 candidate"
"$SCOUTCTL" recovery "$J" >/dev/null 2>&1 && fail "recovery named an unverified checkpoint"
pass "sbatch: both steps watched, only the crashing step has a verdict; checkpoint seen"
