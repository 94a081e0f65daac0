#!/bin/sh
# Runs one fuzz target: fuzz/run-one.sh OUT NAME SECONDS [RUNS]
# With RUNS it runs until that many executions (SECONDS is then a ceiling of
# 24 h); otherwise for SECONDS. Prints one summary line; exit 1 on a finding.
set -u
out=$1 name=$2 seconds=$3 runs=${4:-}
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/corpus/$name" "$out/findings/$name" "$out/logs"
log=$out/logs/$name.log
if [ -n "$runs" ]; then limit="-runs=$runs"; else limit="-max_total_time=$seconds"; fi
start=$(date +%s)
# -rss_limit_mb: ASan's shadow plus the target; -timeout: a single input that
# takes longer is a hang (a finding).
"$out/fuzz_$name" $limit -timeout=10 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$out/findings/$name/" "$out/corpus/$name" "$top/fuzz/corpus/$name" \
  > "$log" 2>&1 < /dev/null
rc=$?
end=$(date +%s)
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
secs=$((end - start)); [ "$secs" -gt 0 ] || secs=1
if [ "$rc" -eq 0 ]; then result=ok; else result=FINDING; fi
printf 'fuzz: %-8s executions %12s time %6ss exec/s %8s result %s\n' "$name" "${execs:-?}" "$secs" \
  "$(( ${execs:-0} / secs ))" "$result"
if [ "$rc" -ne 0 ]; then
  echo "fuzz: $name: see $log; reproduce with $out/fuzz_$name $(ls "$out/findings/$name"/* 2>/dev/null | head -1)" >&2
  grep -E "ERROR|SUMMARY|runtime error" "$log" | head -5 >&2
  exit 1
fi
