#!/bin/sh
# --scout=off and no option: no scoutd and no preload; --scout=on (or a
# bare --scout): the probe is prepended to LD_PRELOAD (never overwriting)
# and the step is named; a
# healthy job leaves zero verdicts and every node in service.
. "$top_srcdir/tests/integration/slurm_lib.sh"
start_cluster
PROBE=$B/probe/.libs/libscout_probe.so
for opt in --scout=off ""; do
  # shellcheck disable=SC2086
  srun $opt -N3 -n3 sh -c 'env; sleep 2' > "$T/env.out" 2>&1 &
  p=$!
  sleep 1.2
  for sp in $(pgrep -f "$B/scoutd/scoutd"); do
    if grep -q "SLURM_CONF=$CL/slurm.conf" "/proc/$sp/environ" 2>/dev/null; then fail "scoutd runs for a job with '${opt:-no option}'"; fi
  done
  wait $p || fail "srun ${opt:-without option} failed: $(cat "$T/env.out")"
  if grep -q "SCOUT_JOB_ID\|libscout_probe" "$T/env.out"; then fail "probe preloaded with '${opt:-no option}'"; fi
done
LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 srun --scout=on -N3 -n3 sh -c 'echo "PRELOAD=$LD_PRELOAD"; echo "JOB=$SCOUT_JOB_ID.$SCOUT_STEP_ID"' > "$T/on.out" 2>&1 ||
  fail "srun --scout=on failed: $(cat "$T/on.out")"
expect_eq "preload lines" "$(grep -c "^PRELOAD=$PROBE:/lib/x86_64-linux-gnu/libm.so.6$" "$T/on.out")" 3
grep -q "^JOB=[0-9]*\.0$" "$T/on.out" || fail "tasks not told their job and step: $(cat "$T/on.out")"
# A value-less --scout (Slurm passes "(null)") means on.
srun --scout -N3 -n3 sh -c 'echo "PRELOAD=$LD_PRELOAD"' > "$T/bare.out" 2>&1 || fail "srun --scout failed: $(cat "$T/bare.out")"
expect_eq "preload lines (--scout)" "$(grep -c "^PRELOAD=$PROBE$" "$T/bare.out")" 3
# A healthy watched job: zero verdicts, nodes idle after the epilog.
srun --scout=on --mpi=pmix -N3 -n6 "$TRAIN" --steps 100 > "$T/run.log" 2>&1 || fail "healthy job failed"
J=$(basename "$(on n1 sh -c "ls -td $SPOOL/[0-9]*/ | head -1")")
for n in n1 n2 n3; do wait_epilog "$J" "$n"; done
expect_eq "verdicts" "$("$SCOUTCTL" query "$J" --json | jq length)" 0
# Each node's scoutd records the ranks it observed in its own spool.
expect_eq "ranks observed per node" "$(for n in n1 n2 n3; do on "$n" sqlite3 -readonly "$SPOOL/$J/$J.db" "select count(*) from ranks where job_id='$J'"; done | tr '\n' ' ')" "2 2 2 "
for n in n1 n2 n3; do expect_eq "$n state" "$(node_state $n)" idle; done
pass "scout off: no scoutd, no preload; on: probe prepended; healthy job: no verdict, nodes idle"
