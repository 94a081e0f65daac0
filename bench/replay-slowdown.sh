#!/bin/sh
# Slowdown of a CPU-bound mpi_train under scout-run with replay on (a cycle
# every 2 s at the default 1% budget and idle priority) vs replay off,
# alternated in one run (after a warm-up run); the medians of five are compared.
set -eu
B=${top_builddir:?}
L=$(mktemp -d /tmp/scout-bench.XXXXXX)
trap 'rm -rf "$L"' EXIT
export SCOUT_LEDGER=$L/l.db SCOUT_RUNTIME_DIR=$L/run
run() {  # replay on|off -> seconds
  s=$(date +%s.%N)
  "$B/cli/scout-run" -n 2 --nodes 2 --scoutd-arg=--replay="$1" --scoutd-arg=--replay-interval=2 -- \
    "$B/examples/mpi_train" --steps 300 --step-ms 0 --hidden 256 --features 256 --batch 256 >/dev/null 2>&1
  e=$(date +%s.%N)
  echo "$e - $s" | bc -l
}
on="" off=""
run off >/dev/null  # warm-up: page cache, shm, first mpirun
for i in 1 2 3 4 5; do
  off="$off $(run off)"
  on="$on $(run on)"
done
median() { printf '%s\n' $1 | sort -n | sed -n 3p; }
mo=$(median "$off"); mn=$(median "$on")
printf '%-26s %10s\n' "mpi_train 300 steps" "seconds"
printf '%-26s %10.2f   (runs:%s)\n' "replay off (baseline)" "$mo" "$off"
printf '%-26s %10.2f   (runs:%s)\n' "replay on" "$mn" "$on"
printf '%-26s %10.2f%%   target below 1%%\n' "slowdown" "$(echo "($mn / $mo - 1) * 100" | bc -l)"
