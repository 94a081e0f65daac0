#!/bin/sh
# A rank of an unmodified third-party program slowed from outside, one case
# per way (the campaign of make bench runs more): meep (meep-openmpi, an
# irregular decomposition: no two ranks exchange with the same offsets, so
# the late-sender rule has no peers to compare) with
#  - a duty-cycle stop: SIGSTOP 0.3 s of every 0.5 s, the rank runs at 40%;
#  - a cgroup CPU quota of 20% of a CPU on the rank's threads;
#  - a CPU hog pinned to the rank's core, every rank pinned to its own core;
# and a healthy run longer than the others (the duty-cycle stop's run, before
# its fault). The slow rank, and only it, is named (a straggler verdict from
# its change point against its own past); the healthy run gives no verdict.
# scout-test: alone (the change-point rule compares a rank with its own past CPU share: tests beside it change every rank's share; issue: pass beside a CPU hog)
# Duration: about 90 s alone: three meep runs, each with a 15 s baseline the change-point rule needs before a fault (then named in 7-8 s); the first is healthy for 30 s, longer than a faulty run, before its fault.
. "$top_srcdir/tests/integration/lib.sh"
command -v meep >/dev/null || fail "meep not found: scripts/install-deps installs meep-openmpi"
command -v taskset >/dev/null || fail "taskset not found (util-linux)"
cat > "$T/wg.ctl" <<'CTL'
(set! geometry-lattice (make lattice (size 32 16 no-size)))
(set! geometry (list (make block (center 0 0) (size infinity 1 infinity)
                      (material (make dielectric (epsilon 12))))))
(set! sources (list (make source (src (make continuous-src (frequency 0.15)))
                     (component Ez) (center -14 0))))
(set! pml-layers (list (make pml (thickness 1.0))))
(set! resolution 10)
(run-until 100000)
CTL
cd "$T"
HOG= DUTY= CG=
cleanup_faults() {
  [ -z "$HOG" ] || kill "$HOG" 2>/dev/null || true
  [ -z "$DUTY" ] || kill "$DUTY" 2>/dev/null || true
  HOG= DUTY=
  if [ -n "$CG" ] && [ -d "$CG" ]; then
    for t in $(cat "$CG/cgroup.procs" "$CG/tasks" 2>/dev/null); do echo "$t" > "$CG_PARENT_PROCS" 2>/dev/null || true; done
    rmdir "$CG" 2>/dev/null || true
  fi
}
trap 'cleanup_faults; cleanup' EXIT

wait_attached() {
  n=0; until [ "$(sqlite3 "$LEDGER" "select count(*) from ranks where job_id='$JOB'" 2>/dev/null)" = "$1" ]; do
    n=$((n + 1)); [ $n -lt 300 ] || fail "job $JOB: $1 ranks never attached"; sleep 0.1; done
}
# named_within LIMIT_S : waits for the straggler verdict, prints the delay
named_within() {
  t0=$(date +%s.%N)
  wait_for_verdict straggler "$1"
  echo "$(date +%s.%N) - $t0" | bc
}
# The scoutds learn each rank's normal over 4 windows of 2.5 s first.
BASELINE=15

# Healthy, longer than a faulty run (15 s of baseline and 7-8 s to the
# verdict); then, in the same run (one start and one baseline fewer), a
# duty-cycle stop of rank 2 (node n2).
next_job
start_run -n 4 --nodes 2 -- meep "$T/wg.ctl"
wait_attached 4; sleep $((BASELINE + 15))
expect_eq "meep healthy verdicts" "$(verdicts_json | jq -c '[.[] | .kind + ":" + (.ranks | map(tostring) | join(","))]')" "[]"
pid=$(rank_pid 2)
( while kill -STOP "$pid" 2>/dev/null; do sleep 0.3; kill -CONT "$pid"; sleep 0.2; done ) & DUTY=$!
d=$(named_within 60)
cleanup_faults; kill -CONT "$pid"
echo "duty-cycle stop of rank 2 named after ${d}s"
expect_verdict straggler "[2]" '["n2"]'
expect_eq "source" "$(verdicts_json | jq -r '.[0].evidence.source')" p2p_change_point
stop_run

# A cgroup CPU quota (20% of a CPU) on rank 1's threads (node n1).
if [ -w /sys/fs/cgroup/cpu/cgroup.procs ] || [ -w /sys/fs/cgroup/cpu/tasks ]; then
  CG=/sys/fs/cgroup/cpu/scout-test-$$; CG_PARENT_PROCS=/sys/fs/cgroup/cpu/tasks
  mkdir "$CG"; echo 100000 > "$CG/cpu.cfs_period_us"; echo 20000 > "$CG/cpu.cfs_quota_us"; CG_TASKS=$CG/tasks
elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null && [ -w /sys/fs/cgroup/cgroup.subtree_control ]; then
  CG=/sys/fs/cgroup/scout-test-$$; CG_PARENT_PROCS=/sys/fs/cgroup/cgroup.procs
  echo +cpu > /sys/fs/cgroup/cgroup.subtree_control; mkdir "$CG"; echo "20000 100000" > "$CG/cpu.max"
  CG_TASKS=$CG/cgroup.procs
else
  fail "no writable cgroup CPU controller (v1 /sys/fs/cgroup/cpu or v2 cpu.max): run as root"
fi
next_job
start_run -n 4 --nodes 2 -- meep "$T/wg.ctl"
wait_attached 4; sleep $BASELINE
pid=$(rank_pid 1)
for t in /proc/"$pid"/task/*; do echo "${t##*/}" > "$CG_TASKS"; done
d=$(named_within 60)
cleanup_faults; CG=
echo "20% CPU quota on rank 1 named after ${d}s"
expect_verdict straggler "[1]" '["n1"]'
stop_run

# A CPU hog on rank 1's core, every rank pinned to its own core (2 ranks).
next_job
start_run -n 2 --nodes 2 -- meep "$T/wg.ctl"
wait_attached 2
taskset -a -p -c 0 "$(rank_pid 0)" >/dev/null
taskset -a -p -c 1 "$(rank_pid 1)" >/dev/null
sleep $BASELINE
taskset -c 1 sh -c 'while :; do :; done' & HOG=$!
d=$(named_within 60)
cleanup_faults
echo "CPU hog on rank 1's core named after ${d}s"
expect_verdict straggler "[1]" '["n2"]'
stop_run
assert_no_leftovers
pass "third-party slow rank: duty-cycle stop, CPU quota and a hog on its core each named exactly (own-past change point); healthy run silent"
