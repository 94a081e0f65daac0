#!/bin/sh
# Where in the code, measured (make bench): every program of tests/mpi_bugs
# at 2, 3, 4 and 8 ranks under scout-run (threshold 2 s). For a buggy
# program: the verdict's kind and status, the ranks it names, whether every
# group inside MPI has its call site (file:line), the seconds from the
# program's start to the verdict. For a correct one: whether it stayed
# silent. Printed as a table; nothing is asserted (test 51 asserts a
# subset). BENCH_BUGS_RANKS (default "2 3 4 8") narrows the sweep.
set -eu
B=${top_builddir:?}
L=$(mktemp -d /tmp/scout-bench.XXXXXX)
trap 'pkill -f "job-id 78" 2>/dev/null; rm -rf "$L"' EXIT
export SCOUT_LEDGER=$L/l.db SCOUT_RUNTIME_DIR=$L/run OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
JOB=78000
q() { "$B/cli/scoutctl" query "$JOB" --json 2>/dev/null || echo '[]'; }
start() { JOB=$((JOB + 1)); "$B/cli/scout-run" --job-id "$JOB" "$@" </dev/null >"$L/run.log" 2>&1 & P=$!; }
stop() { kill -INT "$P" 2>/dev/null || true; sleep 1; kill -INT "$P" 2>/dev/null || true; wait "$P" 2>/dev/null || true; }

# program, the kind its bug must give (or "none" for a correct program),
# from each program's header ("scout-expect: KIND"; "scout-steps: N" for
# the healthy steps before the bug, default 20, and 100 for a correct one).
# BENCH_BUGS narrows the programs (names, space-separated).
SRC=${top_srcdir:-$(dirname "$0")/..}/tests/mpi_bugs
SUITE=$(for f in "$SRC"/*.c; do
  p=$(basename "$f" .c)
  [ -z "${BENCH_BUGS:-}" ] || case " $BENCH_BUGS " in *" $p "*) ;; *) continue ;; esac
  k=$(sed -n 's/^ \* scout-expect: *\([a-z]*\).*/\1/p' "$f" | head -1)
  [ -n "$k" ] || { echo "mpi-bugs: $f has no 'scout-expect:' line" >&2; exit 1; }
  st=$(sed -n 's/^ \* scout-steps: *\([0-9]*\).*/\1/p' "$f" | head -1)
  [ -n "$st" ] || { [ "$k" = none ] && st=100 || st=20; }
  echo "$p $k $st"
done)

printf '%-24s %5s %-10s %-12s %-13s %-10s %-6s %s\n' program ranks expected kind status ranks lines seconds
for n in ${BENCH_BUGS_RANKS:-2 3 4 8}; do
  while read -r prog want steps; do
    t0=$(date +%s.%N)
    start -n "$n" --nodes $(( n < 4 ? 2 : n / 2 )) --stall-threshold 2 -- "$B/tests/mpi_bugs/$prog" "$steps"
    got=none secs=-
    if [ "$want" = none ]; then
      # A correct program ends by itself (a minute at most, or it is stopped).
      i=0
      while kill -0 "$P" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
      stop
      got=$(q | jq -r 'if length == 0 then "none" else .[0].kind end')
    else
      i=0
      while [ $i -lt 300 ]; do
        if [ "$(q | jq length)" -gt 0 ]; then secs=$(echo "$(date +%s.%N) - $t0" | bc -l | xargs printf '%.1f'); break; fi
        kill -0 "$P" 2>/dev/null || break
        sleep 0.1; i=$((i + 1))
      done
      sleep 0.5
      got=$(q | jq -r 'if length == 0 then "none" else .[0].kind end')
      stop
    fi
    v=$(q)
    status=$(echo "$v" | jq -r '.[0].status // "-"')
    ranks=$(echo "$v" | jq -c '.[0].ranks // []')
    # Every group inside MPI names its call site (a line in the program).
    lines=$(echo "$v" | jq -r '.[0].evidence.groups // [] | map(select(.state != "outside")) |
      if length == 0 then "-" elif all(.site != null) then "yes" else "no" end')
    printf '%-24s %5s %-10s %-12s %-13s %-10s %-6s %s\n' "$prog" "$n" "$want" "$got" "$status" "$ranks" "$lines" "$secs"
    echo "$want $got $lines" >> "$L/tally"
  done <<EOF
$SUITE
EOF
done
awk '$1 != "none" { b++; if ($2 != "none") d++; if ($1 == $2) k++; if ($3 == "yes") l++ }
     $1 == "none" { c++; if ($2 == "none") s++ }
     END { printf "buggy runs: %d, detected %d, kind right %d, every call and line named %d; correct runs: %d, silent %d\n", b, d, k, l, c, s }' "$L/tally"
echo "(expected: the kind the bug must give, none for a correct program; lines: every group inside MPI"
echo " names its call's file:line; seconds: from the start of the program to the verdict)"
