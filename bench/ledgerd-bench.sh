#!/bin/sh
# make bench: scout-ledgerd throughput and latency with 64 clients (vs a local
# SQLite file), and the epilog's decision time with the service vs without.
set -eu
B=${top_builddir:?}
S=${top_srcdir:-$(dirname "$0")/..}
if [ "$(id -u)" -ne 0 ]; then echo "(ledgerd bench needs root for munged: skipped)"; exit 0; fi
D=$(mktemp -d /var/tmp/scout-ledgerd-bench.XXXXXX)
trap 'kill $LD 2>/dev/null || true; wait $LD 2>/dev/null || true; rm -rf "$D"' EXIT
if ! munge -n </dev/null >/dev/null 2>&1; then
  mkdir -p /run/munge && chown munge:munge /run/munge
  [ -s /etc/munge/munge.key ] || { mungekey --create --keyfile=/etc/munge/munge.key; chown munge:munge /etc/munge/munge.key; }
  runuser -u munge -- /usr/sbin/munged
fi
PORT=17091
printf 'ledgerd = 127.0.0.1:%s\nsite_ledger = %s/site.db\n' "$PORT" "$D" > "$D/scout.conf"
export SCOUT_CONF=$D/scout.conf
"$B/ledgerd/scout-ledgerd" > "$D/ledgerd.log" 2>&1 &
LD=$!
n=0; until "$B/cli/scoutctl" ping >/dev/null 2>&1; do n=$((n + 1)); [ $n -lt 100 ] || { cat "$D/ledgerd.log"; exit 1; }; sleep 0.1; done
"$B/bench/ledgerd_bench" 7000001 64 40 "$D/local.db" | tee "$D/quiet.out"
echo
# The same 64 honest clients beside 30 hostile ones (bench/hostile_clients.py:
# 10 sending garbage lines, 10 holding silent connections, 10 sending a
# 200,000-deep request in a valid credential; each refused and closed by the
# service, each reconnecting). Bounded: they stop after 60 s at most.
python3 -c 'import sys; sys.stdout.write("{\"v\":2,\"op\":\"ping\",\"x\":" + "[" * 200000 + "]" * 200000 + "}")' > "$D/deep.json"
munge -i "$D/deep.json" > "$D/deep.cred"
python3 "$S/bench/hostile_clients.py" "$PORT" 30 60 "$D/deep.cred" > "$D/hostile.count" &
HOSTILE=$!
sleep 1
"$B/bench/ledgerd_bench" 7000003 64 40 "$D/local-hostile.db" | tee "$D/hostile.out"
kill "$HOSTILE" 2>/dev/null || true
wait "$HOSTILE" 2>/dev/null || true
q=$(sed -n 's/^service_p99_ms //p' "$D/quiet.out"); h=$(sed -n 's/^service_p99_ms //p' "$D/hostile.out")
echo
printf '%-44s %10s\n' "honest clients' p99 (64 clients x 40)" "ms"
printf '%-44s %10.2f\n' "beside 30 hostile clients" "$h"
printf '%-44s %10.2f\n' "baseline: quiet (same run)" "$q"
printf 'ratio (hostile / quiet p99): %.2f (target: at most 2)\n' "$(echo "$h / $q" | bc -l)"
echo
# The epilog's decision: a spool with 50 verdicts, --dry-run, 10 runs each.
"$B/bench/ledgerd_bench" 7000002 1 50 "$D/spool.db" >/dev/null  # fills the spool file (and the service)
printf 'required /usr/lib/slurm/scout.so spool=%s ledger=%s/node-site.db\n' "$D" "$D" > "$D/plugstack.conf"
cp "$D/spool.db" "$D/7000002.db"
t() {
  s=$(date +%s.%N)
  for i in 1 2 3 4 5 6 7 8 9 10; do "$B/spank/scout-epilog" --plugstack "$D/plugstack.conf" --job 7000002 --node n1 --uid 0 --dry-run >/dev/null 2>"$D/epilog.err" || { cat "$D/epilog.err" >&2; exit 1; }; done
  e=$(date +%s.%N)
  echo "($e - $s) * 100" | bc -l
}
with=$(t)
unset SCOUT_CONF
without=$(t)
printf '%-44s %10s\n' "epilog decision (50 verdicts, --dry-run)" "ms/run"
printf '%-44s %10.1f\n' "with scout-ledgerd (forward + query + record)" "$with"
printf '%-44s %10.1f\n' "baseline: local site ledger file only" "$without"
