#!/bin/sh
# Unmodified third-party MPI programs from Debian packages, with faults
# injected from outside: meep (meep-openmpi, an FDTD solver whose ranks
# exchange field halos point to point every time step) and NetPIPE
# (netpipe-openmpi, a ping-pong). A SIGSTOP of a chosen rank is named
# exactly; a SIGKILL is a crash of that rank; healthy runs give no verdict.
. "$top_srcdir/tests/integration/lib.sh"
command -v meep >/dev/null || fail "meep not found: scripts/install-deps installs meep-openmpi"
command -v NPopenmpi >/dev/null || fail "NPopenmpi not found: scripts/install-deps installs netpipe-openmpi"
THRESH=3
cat > "$T/wg.ctl" <<'CTL'
(set! geometry-lattice (make lattice (size 32 16 no-size)))
(set! geometry (list (make block (center 0 0) (size infinity 1 infinity)
                      (material (make dielectric (epsilon 12))))))
(set! sources (list (make source (src (make continuous-src (frequency 0.15)))
                     (component Ez) (center -14 0))))
(set! pml-layers (list (make pml (thickness 1.0))))
(set! resolution 10)
(run-until (string->number (getenv "MEEP_UNTIL")))
CTL
cd "$T"
export MEEP_UNTIL

# wait_attached N : until the job's N ranks are in the ledger
wait_attached() {
  n=0; until [ "$(sqlite3 "$LEDGER" "select count(*) from ranks where job_id='$JOB'" 2>/dev/null)" = "$1" ]; do
    n=$((n + 1)); [ $n -lt 300 ] || fail "job $JOB: $1 ranks never attached"; sleep 0.1; done
}

# meep, healthy: a short run.
next_job; MEEP_UNTIL=20
start_run -n 4 --nodes 2 --stall-threshold $THRESH -- meep "$T/wg.ctl"
finish_run
expect_eq "meep healthy exit" "$RUN_RC" 0
expect_no_verdicts "meep healthy"

# meep: SIGSTOP of rank 2 (node n2) from outside.
next_job; MEEP_UNTIL=100000
start_run -n 4 --nodes 2 --stall-threshold $THRESH -- meep "$T/wg.ctl"
wait_attached 4
sleep 3
kill -STOP "$(rank_pid 2)"
t_fault=$(date +%s.%N)
wait_for_verdict stall $((THRESH + 10))
delay=$(echo "$(date +%s.%N) - $t_fault" | bc)
echo "meep stall named ${delay}s after SIGSTOP (threshold ${THRESH}s)"
[ "$(echo "$delay <= $THRESH + 2 + 0.5" | bc)" = 1 ] || fail "verdict took ${delay}s; expected at most threshold + 2 s"
expect_verdict stall "[2]" '["n2"]'
stop_run

# meep: SIGKILL of rank 1 (node n1).
next_job
start_run -n 4 --nodes 2 --stall-threshold $THRESH -- meep "$T/wg.ctl"
wait_attached 4
sleep 3
kill -KILL "$(rank_pid 1)"
finish_run
[ "$RUN_RC" -ne 0 ] || fail "killed job reported success"
expect_verdict crash "[1]" '["n1"]'

# NetPIPE: healthy, then rank 1 stopped in the middle of its ping-pong.
next_job
start_run -n 2 --nodes 2 --stall-threshold $THRESH -- NPopenmpi -u 4096 -n 200 -o "$T/np.out"
finish_run
expect_eq "netpipe healthy exit" "$RUN_RC" 0
expect_no_verdicts "netpipe healthy"
next_job
start_run -n 2 --nodes 2 --stall-threshold $THRESH -- NPopenmpi -u 65536 -n 1000000 -o "$T/np.out"
wait_attached 2
sleep 2
kill -STOP "$(rank_pid 1)"
wait_for_verdict stall $((THRESH + 10))
expect_verdict stall "[1]" '["n2"]'
stop_run
assert_no_leftovers
pass "third-party: meep and NetPIPE stopped or killed from outside, each named exactly; healthy runs silent"
