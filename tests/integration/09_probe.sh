#!/bin/sh
# The probe: every collective recorded in the rank's own shm record (0600);
# without a job id, or with a malformed one, the job runs exactly as without
# the probe (same output, same exit status, no record).
. "$top_srcdir/tests/integration/lib.sh"
PROBE=$B/probe/.libs/libscout_probe.so
CHECK=$B/tests/integration/probe_check
MPIRUN="mpirun --oversubscribe --bind-to none -np 4"

$MPIRUN -x LD_PRELOAD="$PROBE" -x SCOUT_JOB_ID=$JOB -x SCOUT_STEP_ID=7 "$CHECK" > "$T/check.out" 2>&1 ||
  { cat "$T/check.out"; fail "probe_check failed"; }
grep -q "probe_check: 4[0-9] collectives checked per rank, 15 point-to-point checks, 0 failures" "$T/check.out" || fail "$(cat "$T/check.out")"
if ls /dev/shm | grep -q "^scout\.$JOB\.7\."; then fail "records left after MPI_Finalize"; fi

$MPIRUN "$TRAIN" --steps 60 > "$T/plain.out" 2>&1
$MPIRUN -x LD_PRELOAD="$PROBE" "$TRAIN" --steps 60 > "$T/nojob.out" 2>&1
cmp -s "$T/plain.out" "$T/nojob.out" || fail "output differs with the probe and no job id"
$MPIRUN -x LD_PRELOAD="$PROBE" -x SCOUT_JOB_ID='../etc' "$TRAIN" --steps 60 > "$T/bad.out" 2> "$T/bad.err"
grep -q "scout-probe: init: ignoring SCOUT_JOB_ID='../etc'.*expected a decimal job id" "$T/bad.err" || fail "no warning for a bad job id: $(cat "$T/bad.err")"
cmp -s "$T/plain.out" "$T/bad.out" || fail "output differs with a bad job id"
$MPIRUN -x LD_PRELOAD="$PROBE" -x SCOUT_JOB_ID=$JOB -x SCOUT_PROBE=off "$TRAIN" --steps 60 > "$T/off.out" 2>&1
cmp -s "$T/plain.out" "$T/off.out" || fail "output differs with SCOUT_PROBE=off"
if ls /dev/shm | grep -q "^scout\.\.\./\|^scout\.$JOB\."; then fail "records created without a valid job"; fi
pass "probe: all collectives recorded; harmless without scout"
