#!/bin/sh
# A hostile site (issue 21): an ordinary user, made by this test, attacks
# the real scout-ledgerd on the test cluster; each attack is refused and the
# legitimate path beside it still works.
#  1. a verdict for her running job naming a node outside its allocation:
#     refused (not_allocated); inside it: taken. Root's confirmation on n1
#     of a verdict naming n1 and n2 is recorded for n1 alone.
#  2. a request nested 200,000 levels deep: refused, the service stays up.
#  3. 20 silent connections and 30 that send garbage, against 24 slots: each
#     is closed (first-request deadline, first refused line); root's ping
#     goes through meanwhile.
#  4. 40 made-up operations: the metric labels stay a fixed set.
#  5. her job with no verdict, decided only by root's epilogs: she reads it
#     (the owner is Slurm's word, not the first writer's).
#  6. her job with --scout=on from a login node whose spool is root's 0755:
#     observed (its stopped rank named), her spool directories 0700 hers.
#  7. another user binds the port while the service is down: root's client
#     refuses her reply, and she cannot decode root's request.
. "$top_srcdir/tests/integration/slurm_lib.sh"
# Nothing of the test users outlives the test, pass or fail.
trap 'pkill -KILL -u scout-alice 2>/dev/null || true; pkill -KILL -u scout-bob 2>/dev/null || true; slurm_cleanup' EXIT
LEDGERD=yes start_cluster
REQ=$B/tests/integration/ledgerd_request
for u in scout-alice scout-bob; do
  id -u "$u" >/dev/null 2>&1 || useradd -M -d /nonexistent -s /usr/sbin/nologin "$u" || fail "useradd $u"
done
ALICE=$(id -u scout-alice)
as() { u=$1; shift; (cd / && setpriv --reuid "$u" --regid "$u" --init-groups "$@"); }
# Short deadlines and few slots, so that held connections would show.
stop_ledgerd TERM
start_ledgerd --first-request-timeout 1 --max-connections 24

# --- 1. her verdicts name only her nodes ------------------------------------
as scout-alice srun -N2 -w n1,n2 sleep 120 > "$T/alice.log" 2>&1 &
RUN_PID=$!
n=0
until J=$(squeue -h -u scout-alice -t R -o %i | head -1) && [ -n "$J" ]; do
  n=$((n + 1)); [ $n -lt 150 ] || fail "her job did not start: $(cat "$T/alice.log")"; sleep 0.2
done
v() { printf '{"vkey":"%s.0.o0.1.%s","step":"0","kind":"sdc","status":"attributed","ranks":[0],"hosts":%s}' "$J" "$1" "$2"; }
rc=0; as scout-alice "$REQ" "{\"op\":\"submit\",\"job\":\"$J\",\"verdicts\":[$(v 1 '["n1","n3"]')]}" > "$T/s1" 2>&1 || rc=$?
expect_eq "a verdict naming n3 (not hers): exit" "$rc" 1
grep -q '"refused":"not_allocated"' "$T/s1" || fail "foreign node: $(cat "$T/s1")"
expect_eq "nothing written" "$(sqlite3 "$CL/ledgerd.db" "select count(*) from verdicts where job_id='$J'")" 0
as scout-alice "$REQ" "{\"op\":\"submit\",\"job\":\"$J\",\"verdicts\":[$(v 2 '["n1","n2"]')]}" > "$T/s2" 2>&1 ||
  fail "her own nodes: $(cat "$T/s2")"
rc=0; as scout-bob "$REQ" "{\"op\":\"submit\",\"job\":\"$J\",\"verdicts\":[$(v 3 '["n1"]')]}" > "$T/s3" 2>&1 || rc=$?
expect_eq "another user's submit: exit" "$rc" 1
"$REQ" "{\"op\":\"gating\",\"job\":\"$J\",\"node\":\"n1\",\"decision\":\"drain\",\"reason\":\"test\",\"evidence\":{\"confirmed\":[\"$J.0.o0.1.2\"]}}" >/dev/null ||
  fail "root's gating refused"
expect_eq "confirmed on n1" "$("$SCOUTCTL" node n1 --json | jq -r '.open_verdicts[] | select(.vkey == "'"$J"'.0.o0.1.2") | .confirmation')" confirmed
expect_eq "not on n2" "$("$SCOUTCTL" node n2 --json | jq -r '.open_verdicts[] | select(.vkey == "'"$J"'.0.o0.1.2") | .confirmation')" null

# --- 2. one request, 200,000 levels deep ------------------------------------
python3 -c 'import sys; sys.stdout.write("{\"v\":2,\"op\":\"ping\",\"x\":" + "[" * 200000 + "]" * 200000 + "}")' > "$T/deep.json"
chmod 644 "$T/deep.json"; chmod 755 "$T"
as scout-alice sh -c "munge -i '$T/deep.json' | socat -t 5 - TCP:127.0.0.1:$LEDGERD_PORT" > "$T/deep.reply" 2>&1 || true
as scout-alice unmunge < "$T/deep.reply" > "$T/deep.out" 2>&1 || fail "her reply did not decode: $(head -c 300 "$T/deep.reply")"
grep -q '"refused":"malformed"' "$T/deep.out" || fail "deep request: $(tail -c 300 "$T/deep.out")"
grep -q "nested deeper than 16 levels" "$T/deep.out" || fail "deep request: $(tail -c 300 "$T/deep.out")"
kill -0 "$LEDGERD_PID" 2>/dev/null || fail "scout-ledgerd died: $(tail -5 "$CL/ledgerd.log")"

# --- 3. slots held by silent and garbage connections -------------------------
HOLD=
for i in $(seq 20); do
  as scout-bob sh -c "sleep 30 | socat -t 30 - TCP:127.0.0.1:$LEDGERD_PORT" >/dev/null 2>&1 &
  HOLD="$HOLD $!"
done
for i in $(seq 30); do
  as scout-bob sh -c "while :; do echo garbage; sleep 1; done | socat -t 30 - TCP:127.0.0.1:$LEDGERD_PORT" > "$T/g.$i" 2>&1 &
  HOLD="$HOLD $!"
done
sleep 3  # the first-request deadline (1 s) has passed for every one of them
"$SCOUTCTL" ping > "$T/ping" 2>&1 || fail "root's ping while 50 hostile connections were opened: $(cat "$T/ping")"
curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" > "$T/metrics" || fail "no /metrics"
open_now=$(sed -n 's/^scout_ledgerd_connections //p' "$T/metrics")
[ "$open_now" -le 2 ] || fail "$open_now connections still open after the deadline"
# A silent connection is closed at its first-request deadline (no_request)
# or, when newcomers from her address fill the unauthenticated pool first,
# evicted as the oldest silent one (unauthenticated_evicted): which of the
# two depends on how fast the 50 clients start. Either way it is counted.
grep -q -E 'scout_ledgerd_refused_total\{reason="(no_request|unauthenticated_evicted)"\}' "$T/metrics" ||
  fail "silent connections not counted: $(grep refused "$T/metrics")"
grep -q 'scout_ledgerd_refused_total{reason="credential"}' "$T/metrics" || fail "garbage not refused: $(grep refused "$T/metrics")"
for p in $HOLD; do kill "$p" 2>/dev/null || true; done
pkill -u scout-bob socat 2>/dev/null || true

# --- 4. made-up operations ---------------------------------------------------
for i in $(seq 40); do as scout-alice "$REQ" "{\"op\":\"op$i\"}" >/dev/null 2>&1 || true; done
curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" > "$T/metrics" || fail "no /metrics"
labels=$(grep -c '^scout_ledgerd_requests_total{' "$T/metrics")
[ "$labels" -le 8 ] || fail "$labels operation labels: $(grep '^scout_ledgerd_requests_total' "$T/metrics")"
grep -q '^scout_ledgerd_requests_total{op="unknown"}' "$T/metrics" || fail "no unknown label"

scancel "$J"
wait "$RUN_PID" 2>/dev/null || true
RUN_PID=

# --- 5. her job, written only by root's epilogs ------------------------------
Q=$(as scout-alice srun -N1 -w n3 printenv SLURM_JOB_ID 2> "$T/quiet.log") || fail "her quiet job failed: $(cat "$T/quiet.log")"
n=0
until [ "$(sqlite3 "$CL/ledgerd.db" "select count(*) from gating where job_id='$Q'" 2>/dev/null || echo 0)" -gt 0 ]; do
  n=$((n + 1)); [ $n -lt 300 ] || fail "no epilog decision for her job $Q"; sleep 0.2
done
as scout-alice "$SCOUTCTL" query "$Q" > "$T/q" 2>&1 || fail "she cannot read her own job $Q: $(cat "$T/q")"
expect_eq "her job's owner in the service" "$(sqlite3 "$CL/ledgerd.db" "select uid from jobs where job_id='$Q'")" "$ALICE"

# --- 6. her job, observed, from a login node whose spool is root's 0755 ------
# (as a package or `make demo` as root leaves it): the companion's files are
# on the compute nodes, in the job's directory root made there for her.
mkdir -p /var/spool/scout && chmod 0755 /var/spool/scout
as scout-alice srun --scout=on --mpi=pmix -N3 -n3 "$TRAIN" --steps 400 --step-ms 10 --fault stop:rank=1:step=30 \
  > "$T/observed.log" 2>&1 &
RUN_PID=$!
n=0
until O=$(squeue -h -u scout-alice -t R -o %i | head -1) && [ -n "$O" ]; do
  n=$((n + 1)); [ $n -lt 150 ] || fail "her observed job did not start: $(cat "$T/observed.log")"; sleep 0.2
done
wait_job_verdict "$O" stall 60 n1
expect_eq "her spool directory on n2" "$(on n2 stat -c '%U %a' "$SPOOL/$O")" "scout-alice 700"
grep -q "unobserved\|did not come up" "$T/observed.log" && fail "her job ran unobserved: $(grep scout: "$T/observed.log")"
pid=$(query_on n1 "$O" --json | jq '[.[] | select(.kind == "stall")][0].evidence.culprits[0].pid')
kill -CONT "$pid"
wait "$RUN_PID" || fail "her observed job failed: $(tail -5 "$T/observed.log")"
RUN_PID=

# --- 7. a squatter on the port ---------------------------------------------------
stop_ledgerd TERM
mkdir -p "$T/sq" && chmod 1777 "$T/sq"
as scout-bob socat TCP-LISTEN:"$LEDGERD_PORT",reuseaddr,fork \
  SYSTEM:"head -1 > $T/sq/cred.\$\$; echo '{\"ok\":true,\"v\":2,\"uid\":0,\"user\":\"root\",\"role\":\"root\",\"open_verdicts\":[]}'" &
SQ=$!
n=0; until socat -u /dev/null TCP:127.0.0.1:"$LEDGERD_PORT" 2>/dev/null; do n=$((n + 1)); [ $n -lt 50 ] || fail "no squatter"; sleep 0.1; done
rc=0; "$SCOUTCTL" ping > "$T/sq.out" 2> "$T/sq.err" || rc=$?
[ "$rc" -ne 0 ] || fail "root's scoutctl believed the squatter: $(cat "$T/sq.out")"
grep -q "unauthenticated reply" "$T/sq.err" || fail "squatter's reply: $(cat "$T/sq.err")"
cred=$(ls -S "$T"/sq/cred.* | head -1)  # the largest: the probe above sent nothing
[ -s "$cred" ] || fail "the squatter got no request"
rc=0; as scout-bob unmunge < "$cred" > "$T/sq.dec" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "the squatter decoded root's request: $(cat "$T/sq.dec")"
pkill -u scout-bob socat 2>/dev/null || true  # `as` runs it in a subshell: $SQ is that shell
wait "$SQ" 2>/dev/null || true
n=0; while socat -u /dev/null TCP:127.0.0.1:"$LEDGERD_PORT" 2>/dev/null; do n=$((n + 1)); [ $n -lt 50 ] || fail "the squatter still listens"; sleep 0.1; done
start_ledgerd
"$SCOUTCTL" ping >/dev/null || fail "the service did not come back"
pass "hostile user: foreign nodes, deep requests, held slots, made-up operations and a squatter refused; her own job readable"
