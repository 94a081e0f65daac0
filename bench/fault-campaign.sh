#!/bin/sh
# The fault campaign (make bench; one case per fault kind runs in make check,
# tests/integration/33 and 42): unmodified MPI programs from Debian with
# irregular decompositions, faults injected from outside the program, each
# run checked for exactly the injected rank:
#   meep     (meep-openmpi: FDTD, 4 ranks on 2 simulated nodes, chunks of
#            unequal neighbours)
#   lammps   (lammps: Lennard-Jones melt, 4 ranks on 2 simulated nodes,
#            spatial decomposition)
#   gromacs  (gromacs: a box of 2,165 SPC waters with PME, 4 ranks on 2
#            simulated nodes, domain decomposition with dynamic load
#            balancing, which moves work away from a slow rank)
# Faults: duty (SIGSTOP 0.3 s of every 0.5 s: 40% speed), quota (a cgroup CPU
# quota of 20% of a CPU), hog (a busy loop pinned to the rank's core, every
# rank pinned to its own core: 2 ranks, one per node), stop (SIGSTOP), kill
# (SIGKILL), healthy (no fault, as long as a faulty run). Expected verdict:
# straggler / straggler / straggler / stall / crash naming the rank and its
# host, and no other verdict; healthy: no verdict. Slow ranks must be named
# within 60 s.
# CAMPAIGN_REPEAT (default 3) runs per case; CAMPAIGN_PROGRAMS, CAMPAIGN_FAULTS
# narrow it; CAMPAIGN_ONSET (default 15) is when the fault starts, in
# seconds after every rank attached (5-10: slowed during the warm-up). Needs
# root (cgroups; taskset of other users' processes is not needed: everything
# is this user's) and meep, lmp and gmx_mpi (scripts/install-deps --bench).
set -eu
B=$(cd "${top_builddir:?}" && pwd)
L=$(mktemp -d /tmp/scout-campaign.XXXXXX)
FAULT_PIDS=
CG=
cleanup() {
  for p in $FAULT_PIDS; do kill "$p" 2>/dev/null || true; done
  [ -z "$CG" ] || { for t in $(cat "$CG/tasks" 2>/dev/null); do echo "$t" > /sys/fs/cgroup/cpu/tasks 2>/dev/null || true; done; rmdir "$CG" 2>/dev/null || true; }
  pkill -f "job-id 88" 2>/dev/null || true
  rm -rf "$L"
}
trap cleanup EXIT
export SCOUT_LEDGER=$L/l.db SCOUT_RUNTIME_DIR=$L/run OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
JOB=88000
REPEAT=${CAMPAIGN_REPEAT:-3}
PROGRAMS=${CAMPAIGN_PROGRAMS:-meep lammps gromacs}
FAULTS=${CAMPAIGN_FAULTS:-healthy duty quota hog stop kill}
BASELINE=${CAMPAIGN_ONSET:-15}   # seconds of healthy running before the fault (the scoutds learn each rank's normal)
cat > "$L/wg.ctl" <<'CTL'
(set! geometry-lattice (make lattice (size 32 16 no-size)))
(set! geometry (list (make block (center 0 0) (size infinity 1 infinity)
                      (material (make dielectric (epsilon 12))))))
(set! sources (list (make source (src (make continuous-src (frequency 0.15)))
                     (component Ez) (center -14 0))))
(set! pml-layers (list (make pml (thickness 1.0))))
(set! resolution 10)
(run-until 100000)
CTL
if command -v lmp >/dev/null && [ -f /usr/share/lammps/examples/melt/in.melt ]; then
  sed -e 's/^run.*/run 100000000/' -e 's/^thermo.*/thermo 100000/' /usr/share/lammps/examples/melt/in.melt > "$L/in.melt"
fi
# GROMACS: a water box made by its own tools (no input file to carry), run
# until stopped; no backups of its output files between runs.
if command -v gmx_mpi >/dev/null; then
  printf '#include "oplsaa.ff/forcefield.itp"\n#include "oplsaa.ff/spc.itp"\n[ system ]\nwater\n[ molecules ]\n' > "$L/topol.top"
  printf '%s\n' 'integrator = md' 'dt = 0.002' 'nsteps = -1' 'nstlog = 0' 'nstenergy = 0' 'nstcalcenergy = 100' \
    'cutoff-scheme = Verlet' 'coulombtype = PME' 'rcoulomb = 1.0' 'rvdw = 1.0' 'tcoupl = v-rescale' 'tc-grps = System' \
    'tau-t = 0.1' 'ref-t = 300' 'gen-vel = yes' 'gen-temp = 300' > "$L/md.mdp"
  (cd "$L" && gmx_mpi -quiet solvate -cs spc216.gro -box 4 4 4 -o conf.gro -p topol.top &&
    gmx_mpi -quiet grompp -f md.mdp -c conf.gro -p topol.top -o md.tpr -maxwarn 2) > "$L/gmx-setup.log" 2>&1 || rm -f "$L/md.tpr"
fi
export GMX_MAXBACKUP=-1 OMP_NUM_THREADS=1
cd "$L"

q() { "$B/cli/scoutctl" query "$JOB" --json 2>/dev/null || echo '[]'; }
rank_pid() { sqlite3 "$SCOUT_LEDGER" "select pid from ranks where job_id='$JOB' and rank=$1" 2>/dev/null; }
attached() { sqlite3 "$SCOUT_LEDGER" "select count(*) from ranks where job_id='$JOB'" 2>/dev/null || echo 0; }
command_of() {
  case $1 in
    meep) echo "meep $L/wg.ctl" ;;
    lammps) echo "lmp -in $L/in.melt -log none -screen none" ;;
    gromacs) echo "gmx_mpi mdrun -quiet -s $L/md.tpr -ntomp 1 -npme 0 -nb cpu -deffnm $L/md" ;;
  esac
}
# verdict_within KIND LIMIT : seconds to the first verdict of KIND, or "none"
verdict_within() {
  t0=$(date +%s.%N); n=0
  while [ $n -lt $(($2 * 5)) ]; do
    if [ "$(q | jq --arg k "$1" 'map(select(.kind == $k)) | length')" -gt 0 ]; then
      echo "$(date +%s.%N) - $t0" | bc -l | xargs printf '%.1f'; return 0; fi
    sleep 0.2; n=$((n + 1))
  done
  echo none
}
stop_job() {
  for p in $FAULT_PIDS; do kill "$p" 2>/dev/null || true; done
  FAULT_PIDS=
  for p in $(sqlite3 "$SCOUT_LEDGER" "select pid from ranks where job_id='$JOB'" 2>/dev/null); do kill -CONT "$p" 2>/dev/null || true; done
  kill -INT "$P" 2>/dev/null || true; sleep 1; kill -INT "$P" 2>/dev/null || true; wait "$P" 2>/dev/null || true
}

printf '%-8s %-8s %-4s %-10s %-22s %-8s %s\n' program fault run expected got "t(s)" result
for prog in $PROGRAMS; do
  case $prog in
    meep) command -v meep >/dev/null || { echo "$prog: meep not installed (scripts/install-deps)"; continue; } ;;
    lammps) [ -f "$L/in.melt" ] || { echo "$prog: lmp not installed (scripts/install-deps --bench)"; continue; } ;;
    gromacs) [ -f "$L/md.tpr" ] || { echo "$prog: gmx_mpi not installed (scripts/install-deps --bench), or its setup failed"; continue; } ;;
  esac
  for fault in $FAULTS; do
    exact=0 total=0 times=""
    for i in $(seq 1 "$REPEAT"); do
      JOB=$((JOB + 1)); np=4; victim=2; host=n2
      case $fault in hog) np=2; victim=1; host=n2 ;; quota) victim=1; host=n1 ;; esac
      # shellcheck disable=SC2046
      "$B/cli/scout-run" --job-id "$JOB" -n "$np" --nodes 2 --stall-threshold 5 -- $(command_of "$prog") >"$L/run.log" 2>&1 &
      P=$!
      n=0; while [ "$(attached)" != "$np" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
      if [ "$(attached)" != "$np" ]; then
        echo "$prog $fault $i: the ranks did not attach within 30 s; scout-run said:"; tail -15 "$L/run.log"
        stop_job; total=$((total + 1)); continue
      fi
      if [ "$fault" = hog ]; then
        taskset -a -p -c 0 "$(rank_pid 0)" >/dev/null; taskset -a -p -c 1 "$(rank_pid 1)" >/dev/null
      fi
      sleep $BASELINE
      pid=$(rank_pid $victim)
      expected="straggler:$victim"
      case $fault in
        healthy) expected="-" ;;
        duty) ( while kill -STOP "$pid" 2>/dev/null; do sleep 0.3; kill -CONT "$pid"; sleep 0.2; done ) & FAULT_PIDS=$! ;;
        quota) CG=/sys/fs/cgroup/cpu/scout-campaign-$$; mkdir -p "$CG"; echo 100000 > "$CG/cpu.cfs_period_us"
          echo 20000 > "$CG/cpu.cfs_quota_us"; for t in /proc/"$pid"/task/*; do echo "${t##*/}" > "$CG/tasks"; done ;;
        hog) taskset -c 1 sh -c 'while :; do :; done' & FAULT_PIDS=$! ;;
        stop) kill -STOP "$pid"; expected="stall:$victim" ;;
        kill) kill -KILL "$pid"; expected="crash:$victim" ;;
      esac
      if [ "$fault" = healthy ]; then sleep 45; t="-"; else t=$(verdict_within "${expected%%:*}" 60); fi
      sleep 3   # anything else that would follow
      got=$(q | jq -r '[.[] | .kind + ":" + (.ranks | map(tostring) | join(",")) + "@" + (.hosts | join(","))] | join(" ")')
      want="$expected@$host"; [ "$expected" = "-" ] && want=""
      if [ "$got" = "$want" ]; then r=exact; exact=$((exact + 1)); [ "$t" = "-" ] || times="$times $t"; else r=WRONG; fi
      total=$((total + 1))
      printf '%-8s %-8s %-4s %-10s %-22s %-8s %s\n' "$prog" "$fault" "$i" "$expected" "${got:--}" "$t" "$r"
      stop_job
      if [ -n "$CG" ]; then rmdir "$CG" 2>/dev/null || true; CG=; fi
    done
    echo "$prog $fault: $exact/$total exact; time to verdict (s):${times:- -}" >> "$L/summary"
  done
done
echo
echo "-- summary"
cat "$L/summary"
