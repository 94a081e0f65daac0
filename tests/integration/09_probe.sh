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
grep -q "probe_check: 4[0-9] collectives checked per rank, 19 point-to-point checks, 0 failures" "$T/check.out" || fail "$(cat "$T/check.out")"
if ls /dev/shm | grep -q "^scout\.$JOB\.7\."; then fail "records left after MPI_Finalize"; fi

# The record the probe writes: version 10 for a program MPI_Init gave one
# thread level, version 8 (threads apart) when MPI_Init gave
# MPI_THREAD_MULTIPLE (Open MPI's OMPI_MPI_THREAD_LEVEL=3): another thread
# may post requests while one waits. Read from rank 0's record while it runs.
record_version() {
  $MPIRUN -x LD_PRELOAD="$PROBE" -x SCOUT_JOB_ID=$JOB -x SCOUT_STEP_ID=8 "$@" "$TRAIN" --steps 400 --step-ms 10 \
    > "$T/ver.out" 2>&1 & vp=$!
  n=0; until [ -e "/dev/shm/scout.$JOB.8.0" ] || [ $n -ge 100 ]; do n=$((n + 1)); sleep 0.1; done
  sleep 0.3
  od -A n -t u4 -j 8 -N 4 "/dev/shm/scout.$JOB.8.0" 2>/dev/null | tr -d ' '
  wait $vp || fail "mpi_train under the probe failed: $(cat "$T/ver.out")"
}
expect_eq "record version (MPI_Init)" "$(record_version)" 10
expect_eq "record version (MPI_Init given MPI_THREAD_MULTIPLE)" "$(record_version -x OMPI_MPI_THREAD_LEVEL=3)" 8

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
