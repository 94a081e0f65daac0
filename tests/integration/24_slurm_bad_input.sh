#!/bin/sh
# Bad input under Slurm: --scout=maybe fails srun and sbatch naming the
# accepted values; an unknown plugstack key or a bad value fails with the
# key named; an
# unreadable probe path gives a warning and the job runs unobserved (the
# documented behaviour), or fails the step when the site set required=yes.
. "$top_srcdir/tests/integration/slurm_lib.sh"
start_cluster
rc=0; srun --scout=maybe -N1 true > "$T/o" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "srun --scout=maybe succeeded"
grep -q "scout: option: --scout=maybe is not valid; expected --scout=on or --scout=off" "$T/o" || fail "srun message: $(cat "$T/o")"
rc=0; sbatch --scout=maybe --wrap true > "$T/o" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "sbatch --scout=maybe succeeded"
grep -q "expected --scout=on or --scout=off" "$T/o" || fail "sbatch message: $(cat "$T/o")"
rc=0; srun --scout-stall-threshold=soon -N1 true > "$T/o" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && grep -q "expected seconds from 1 to 86400" "$T/o" || fail "bad threshold: $(cat "$T/o")"

# Unknown plugstack key (srun reads plugstack.conf when it starts).
sed -i 's/$/ colour=blue/' "$CL/plugstack.conf"
rc=0; srun -N1 true > "$T/o" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "srun ran with an unknown plugstack key"
grep -q "scout: init: plugstack argument 'colour': unknown key" "$T/o" || fail "plugstack message: $(cat "$T/o")"

sed -i 's/ colour=blue$/ prolog_kinds=sdc,flaky/' "$CL/plugstack.conf"
rc=0; srun -N1 true > "$T/o" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "srun ran with a bad prolog_kinds"
grep -q "plugstack argument prolog_kinds=sdc,flaky: 'flaky' is not a drainable kind" "$T/o" ||
  fail "prolog_kinds message: $(cat "$T/o")"

sed -i 's/ prolog_kinds=sdc,flaky$/ learn_aggregation=average/' "$CL/plugstack.conf"
rc=0; srun -N1 true > "$T/o" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "srun ran with a bad learn_aggregation"
grep -q "plugstack argument learn_aggregation=average: expected personalised, clustered, matched, fedadam, fedavgm or fedavg" "$T/o" ||
  fail "learn_aggregation message: $(cat "$T/o")"

# Unreadable probe: warning, the job runs unobserved.
sed -i 's/ learn_aggregation=average$//' "$CL/plugstack.conf"
"$top_srcdir/tests/cluster/cluster.sh" stop "$CL"
start_cluster probe=/nonexistent/libscout_probe.so
srun --scout=on --mpi=pmix -N3 -n3 "$TRAIN" --steps 20 > "$T/o" 2>&1 || fail "job failed with an unreadable probe: $(cat "$T/o")"
grep -q "scout: local: warning: probe /nonexistent/libscout_probe.so: No such file or directory; the job runs unobserved" "$T/o" ||
  fail "no warning: $(cat "$T/o")"
grep -q "done: 20 steps" "$T/o" || fail "job did not run"
"$top_srcdir/tests/cluster/cluster.sh" stop "$CL"
start_cluster probe=/nonexistent/libscout_probe.so required=yes
rc=0; srun --scout=on -N1 true > "$T/o" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "required=yes: srun succeeded without scout"
grep -q "scout is required at this site" "$T/o" || fail "required message: $(cat "$T/o")"
pass "slurm bad input: clear errors, documented behaviour"
