#!/bin/sh
# scout-ledgerd down for a whole job step: the scoutds cannot forward (they
# retry, then give up at stop: the spool keeps everything); the service is
# back before the job ends, and the epilogs forward what their spools hold:
# the crash verdict reaches the service exactly once, and the decisions too.
. "$top_srcdir/tests/integration/slurm_lib.sh"
LEDGERD=yes start_cluster
stop_ledgerd TERM
cat > "$CL/job.sh" <<JOB
#!/bin/sh
#SBATCH --scout=on
#SBATCH -N3 -n6
#SBATCH -o $CL/job.out
srun --mpi=pmix "$TRAIN" --steps 200 --step-ms 20 --fault crash:rank=3:step=30
echo "step done"
while [ ! -e "$CL/go" ]; do sleep 0.2; done
JOB
J=$(sbatch --parsable "$CL/job.sh") || fail "sbatch failed"
n=0
until grep -q "step done" "$CL/job.out" 2>/dev/null; do
  n=$((n + 1)); [ $n -lt 600 ] || fail "the step did not end: $(cat "$CL/job.out")"; sleep 0.2
done
# Each scoutd's log is on its node, in the job's spool directory.
log=$(on n1 sh -c "cat $SPOOL/$J/*.scoutd.log")
echo "$log" | grep -q "not forwarded" || fail "the scoutds did not report unforwarded verdicts: $log"
expect_eq "rows in the service while it was down" "$(sqlite3 "$CL/ledgerd.db" "select count(*) from verdicts where job_id='$J'" 2>/dev/null || echo 0)" 0
start_ledgerd
touch "$CL/go"
n=0
until [ "$(sqlite3 "$CL/ledgerd.db" "select count(*) from gating where job_id='$J'" 2>/dev/null || echo 0)" -ge 3 ]; do
  n=$((n + 1)); [ $n -lt 300 ] || fail "epilog decisions not in scout-ledgerd within 60 s: $(sqlite3 "$CL/ledgerd.db" "select * from gating"); slurmd: $(grep -i -h epilog "$CL"/log/slurmd.n*.log 2>/dev/null | tail -6)"; sleep 0.2
done
expect_eq "crash rows, exactly once" "$(sqlite3 "$CL/ledgerd.db" "select count(*) from verdicts where job_id='$J' and kind='crash'")" 1
expect_eq "forwarded by the epilog (root)" "$(sqlite3 "$CL/ledgerd.db" "select origin from verdicts where job_id='$J' and kind='crash'")" "ledgerd: forwarded by uid 0"
expect_eq "n2 drained" "$(sqlite3 "$CL/ledgerd.db" "select decision from gating where job_id='$J' and node='n2' and decision != 'error'")" drain
expect_eq "query from the login node" "$("$SCOUTCTL" query "$J" --json | jq -c 'map(.kind)')" '["crash"]'
pass "scout-ledgerd down for the step: the epilogs forwarded the spools' verdicts once, decisions recorded"
