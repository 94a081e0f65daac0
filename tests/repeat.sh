#!/bin/sh
# Runs chosen tests N times in a row, each as make check runs it, optionally
# beside a CPU hog on every core; prints one line per run and a count.
#   tests/repeat.sh [-n N] [--hog] [--build DIR] TEST...
# TEST: a path under tests/ (tests/integration/16_telemetry.sh) or a name
# (16_telemetry). Exit 0 when every run passed (77 counts as a skip). Logs of
# failed runs are kept under DIR/repeat-logs/.
#   make -C build repeat TESTS_REPEAT="16_telemetry 35_nccl" N=10 HOG=1
set -eu
n=10 hog=no top_srcdir=$(cd "$(dirname "$0")/.." && pwd) top_builddir=
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=${2:?-n needs a count}; shift 2 ;;
    --hog) hog=yes; shift ;;
    --build) top_builddir=$(cd "${2:?--build needs a directory}" && pwd); shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "repeat.sh: unknown option $1 (expected -n N, --hog, --build DIR)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "repeat.sh: name at least one test (e.g. 16_telemetry)" >&2; exit 2; }
case "$n" in ''|*[!0-9]*) echo "repeat.sh: -n expects a positive count, got '$n'" >&2; exit 2 ;; esac
: "${top_builddir:=$top_srcdir/build}"
[ -f "$top_builddir/Makefile" ] || { echo "repeat.sh: no build in $top_builddir (run make first, or --build DIR)" >&2; exit 2; }
export top_srcdir top_builddir
logs=$top_builddir/repeat-logs; mkdir -p "$logs"
hogs=
stop_hogs() { [ -z "$hogs" ] || kill $hogs 2>/dev/null || true; }
trap stop_hogs EXIT INT TERM
if [ "$hog" = yes ]; then
  c=0; while [ $c -lt "$(nproc)" ]; do sh -c 'while :; do :; done' & hogs="$hogs $!"; c=$((c + 1)); done
fi
total=0 passed=0 failed=0 skipped=0
for t in "$@"; do
  case "$t" in
    */*) path=$top_srcdir/$t ;;
    *) path=$(ls "$top_srcdir"/tests/integration/"$t"*.sh 2>/dev/null | head -1)
       [ -n "$path" ] || path=$top_builddir/tests/unit/$t ;;
  esac
  [ -e "$path" ] || { echo "repeat.sh: no test $t" >&2; exit 2; }
  name=$(basename "$path" .sh)
  i=1
  while [ $i -le "$n" ]; do
    t0=$(date +%s)
    rc=0; "$path" > "$logs/$name.$i.log" 2>&1 || rc=$?
    d=$(( $(date +%s) - t0 ))
    total=$((total + 1))
    case $rc in
      0) passed=$((passed + 1)); rm -f "$logs/$name.$i.log"; r=pass ;;
      77) skipped=$((skipped + 1)); rm -f "$logs/$name.$i.log"; r=skip ;;
      *) failed=$((failed + 1)); r="FAIL (exit $rc; $logs/$name.$i.log)" ;;
    esac
    echo "$name run $i/$n${hogs:+ (hog on $(nproc) cores)}: $r in ${d}s"
    i=$((i + 1))
  done
done
echo "repeat: $passed passed, $failed failed, $skipped skipped of $total runs${hogs:+, beside a CPU hog on every core}"
[ "$failed" -eq 0 ]
