#!/bin/sh
# Crash consistency of the real scout-ledgerd: 64 clients submit verdicts
# (each through MUNGE, each with its own key) while scout-ledgerd is killed
# with SIGKILL at a random moment, SCOUT_CRASHES times (3 here; make bench
# runs 50). After every kill the site ledger passes PRAGMA integrity_check,
# and every verdict the service acknowledged is in it exactly once, after
# the restart too.
. "$top_srcdir/tests/integration/lib.sh"
CRASHES=${SCOUT_CRASHES:-3}
CLIENTS=${SCOUT_CRASH_CLIENTS:-64}
R=$B/tests/integration/ledgerd_request
[ "$(id -u)" -eq 0 ] || fail "needs root (munged)"
"$top_srcdir/tests/cluster/cluster.sh" munge "$T" || fail "munged did not start"
LD=
# A block of ports of its own (tests run side by side), given back on exit.
PORT=$(( $(SCOUT_CLUSTER_OWNER=$$ "$top_srcdir/tests/cluster/cluster.sh" ports "$T/ports") + 10 )) || fail "no free ports"
trap '[ -n "$LD" ] && kill -9 $LD 2>/dev/null; touch "$T/stop"; wait 2>/dev/null; "$top_srcdir/tests/cluster/cluster.sh" stop "$T/ports"; cleanup' EXIT
printf 'ledgerd = 127.0.0.1:%s\nsite_ledger = %s/site.db\n' "$PORT" "$T" > "$T/scout.conf"
export SCOUT_CONF=$T/scout.conf
JOBID=7000100
start() {
  "$B/ledgerd/scout-ledgerd" >> "$T/ledgerd.log" 2>&1 &
  LD=$!
  n=0; until "$SCOUTCTL" ping >/dev/null 2>&1; do n=$((n + 1)); [ $n -lt 100 ] || fail "scout-ledgerd did not start: $(tail -5 "$T/ledgerd.log")"; sleep 0.1; done
}
# client ROUND C: submits until $T/stop; each acknowledged key in acked.C
client() {
  i=0
  while [ ! -e "$T/stop" ]; do
    key="$JOBID.0.o$2.$1.$i"
    if "$R" "{\"v\":2,\"op\":\"submit\",\"job\":\"$JOBID\",\"verdicts\":[{\"vkey\":\"$key\",\"step\":\"0\",\"kind\":\"stall\",\"status\":\"attributed\",\"ranks\":[1],\"hosts\":[\"n1\"],\"evidence\":{},\"detected_at\":\"2026-12-01T00:00:00.000Z\"}]}" >/dev/null 2>&1; then
      echo "$key" >> "$T/acked.$2"
    fi
    i=$((i + 1))
  done
}
k=1
while [ "$k" -le "$CRASHES" ]; do
  start
  rm -f "$T/stop"
  pids=
  c=0
  while [ "$c" -lt "$CLIENTS" ]; do client "$k" "$c" & pids="$pids $!"; c=$((c + 1)); done
  # 1.0 to 2.9 s into the load.
  sleep "$(( 1 + k % 2 )).$(( (k * 37) % 10 ))"
  kill -KILL "$LD"; wait "$LD" 2>/dev/null || true; LD=
  touch "$T/stop"
  wait $pids 2>/dev/null || true
  expect_eq "kill $k: integrity" "$(sqlite3 "$T/site.db" 'pragma integrity_check')" ok
  cat "$T"/acked.* 2>/dev/null | sort > "$T/acked"
  sqlite3 "$T/site.db" "select vkey from verdicts where job_id='$JOBID'" | sort > "$T/rows"
  expect_eq "kill $k: acknowledged twice" "$(uniq -d < "$T/acked" | wc -l)" 0
  expect_eq "kill $k: acknowledged, missing" "$(comm -23 "$T/acked" "$T/rows" | wc -l)" 0
  expect_eq "kill $k: rows present twice" "$(uniq -d < "$T/rows" | wc -l)" 0
  k=$((k + 1))
done
acked=$(wc -l < "$T/acked")
[ "$acked" -ge $((CRASHES * 10)) ] || fail "only $acked verdicts acknowledged under load: $(tail -5 "$T/ledgerd.log")"
# After a last restart the service serves them all, once.
start
expect_eq "after restart: rows" "$(sqlite3 "$T/site.db" "select count(distinct vkey) = count(*) from verdicts where job_id='$JOBID'")" 1
# A client's kept connection outlives the service (scoutd's forwarder, the
# epilog): its next request goes out on a new connection. Control: the
# first request on the connection is answered.
rm -f "$T/go"
"$R" '{"op":"ping"}' --wait-for "$T/go" '{"op":"ping"}' > "$T/kept.out" 2> "$T/kept.err" &
KEPT=$!
n=0; until [ -s "$T/kept.out" ]; do n=$((n + 1)); [ $n -lt 100 ] || fail "the first ping was not answered: $(cat "$T/kept.err")"; sleep 0.1; done
kill -KILL "$LD"; wait "$LD" 2>/dev/null || true; LD=
start
touch "$T/go"
rc=0; wait "$KEPT" || rc=$?
expect_eq "a kept connection after a restart: the second ping" "$rc" 0
expect_eq "a kept connection after a restart: replies" "$(grep -c '"ok":true' "$T/kept.out")" 2
kill "$LD"; wait "$LD" 2>/dev/null || true; LD=
echo "scout-ledgerd SIGKILLed $CRASHES times under $CLIENTS clients: integrity ok every time; $acked acknowledged verdicts, each present once ($(wc -l < "$T/rows") rows)"
pass "ledgerd crash: $CRASHES kills under load, integrity ok, every acknowledged verdict present exactly once"
