#!/bin/sh
# From a job's end to each node's epilog decision, on the site-shaped test
# cluster: EPILOG_JOBS jobs (default 50) of 3 nodes each, one after another,
# each a short healthy srun --scout=on, while EPILOG_LOAD busy loops
# (default 2: both cores, as the test suite's own load) run on the host.
# The end is when srun returned to the user; the decision is the gating row
# the node's epilog recorded in the site ledger (decided_at). Prints the
# distribution per node-decision and how many took more than 30 s (the
# tests' wait_epilog limit is 60 s).
#   top_builddir=build top_srcdir=. sh bench/epilog-latency.sh
. "$top_srcdir/tests/integration/slurm_lib.sh"
N=${EPILOG_JOBS:-50}
LOAD=${EPILOG_LOAD:-2}
start_cluster
LOADPIDS=
i=0
while [ "$i" -lt "$LOAD" ]; do
  sh -c 'while :; do :; done' &
  LOADPIDS="$LOADPIDS $!"
  i=$((i + 1))
done
trap 'kill $LOADPIDS 2>/dev/null; slurm_cleanup' EXIT
: > "$T/delays"
i=0
while [ "$i" -lt "$N" ]; do
  srun -J "epilog-latency-$i" --scout=on --mpi=pmix -N3 -n3 "$TRAIN" --steps 40 --step-ms 10 > "$T/run.log" 2>&1 ||
    echo "job $i failed: $(tail -2 "$T/run.log")" >&2
  end_ms=$(date +%s%3N)
  # Slurm keeps a finished job's record (MinJobAge): its id by our name.
  J=$(scontrol -o show job | sed -n "s/^JobId=\([0-9]*\) JobName=epilog-latency-$i .*/\1/p" | head -1)
  [ -n "$J" ] || fail "job epilog-latency-$i not found in Slurm's records"
  for n in n1 n2 n3; do
    k=0
    until [ "$(sqlite3 -readonly "$SITE" "select count(*) from gating where job_id='$J' and node='$n'" 2>/dev/null || echo 0)" -gt 0 ]; do
      k=$((k + 1)); [ $k -lt 1500 ] || break; sleep 0.2
    done
    at=$(sqlite3 -readonly "$SITE" "select min(decided_at) from gating where job_id='$J' and node='$n'")
    if [ -z "$at" ]; then echo "$J $n none" >> "$T/delays"; continue; fi
    at_ms=$(date -d "$at" +%s%3N)
    echo "$J $n $(( at_ms - end_ms ))" >> "$T/delays"
  done
  i=$((i + 1))
done
echo "job end (srun returned) to the node's epilog decision: $N jobs x 3 nodes, $LOAD busy loops on the host"
awk '$3 == "none" { none++; next } { print $3 }' "$T/delays" | sort -n > "$T/sorted"
none=$(grep -c " none$" "$T/delays" || true)
cnt=$(wc -l < "$T/sorted")
pct() { awk -v p="$1" -v n="$cnt" 'NR == int((n - 1) * p / 100) + 1 { printf "%.2f", $1 / 1000 }' "$T/sorted"; }
printf '%-10s %8s %8s %8s %8s %8s %8s %10s %8s\n' decisions min p50 p90 p99 max ">30s" "none(300s)" mean
printf '%-10s %8s %8s %8s %8s %8s %8s %10s %8s\n' "$cnt" "$(pct 0)" "$(pct 50)" "$(pct 90)" "$(pct 99)" "$(pct 100)" \
  "$(awk '$1 > 30000' "$T/sorted" | wc -l)" "$none" "$(awk '{ s += $1 } END { if (NR) printf "%.2f", s / NR / 1000 }' "$T/sorted")"
echo "per node: $(for n in n1 n2 n3; do printf '%s max %.2f s  ' "$n" "$(awk -v n="$n" '$2 == n && $3 != "none" { if ($3 > m) m = $3 } END { print m / 1000 }' "$T/delays")"; done)"
echo "slowest: $(sort -k3 -n "$T/delays" | tail -3 | tr '\n' ';')"
