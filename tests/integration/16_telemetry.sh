#!/bin/sh
# Federated telemetry outlier detection over 4 scoutds: every node applies
# the same global model each round; a CPU hog inside rank 2 (from step 700,
# after the warm-up) -> one advisory telemetry_anomaly verdict naming rank 2
# on n3 with cpu_utilisation as the top feature; a healthy run -> none; a
# warm-up under a saturated host (a busy loop per core) -> the threshold
# comes down after it, and the hog in rank 2 is named.
# What the nodes' learners hold is read as a user reads it, from
# `scoutctl status JOB --json` (its "learners": node, round, model, scoring),
# polled while the job runs.
# scout-test: alone (the learner's warm-up and a CPU hog inside one rank: tests beside it load every rank's CPU features; issue: pass beside a CPU hog)
# Duration: about 90 s alone: two 1000-step runs and an 1800-step one; the learner needs its 10-round warm-up before the hog starts at step 700 (1300 after a loaded warm-up, which must also come down first).
. "$top_srcdir/tests/integration/lib.sh"
LEARN="--scoutd-arg=--learn-window=0.5 --scoutd-arg=--learn-round=1 --scoutd-arg=--learn-warmup=10"
# sample_learners: one poll, one line per answer: [[node, round, model, scoring]...]
sample_learners() {
  "$SCOUTCTL" status "$JOB" --json 2>/dev/null |
    jq -c '[.learners[] | [.node, .round, .model, .scoring, .threshold]] | sort' 2>/dev/null >> "$T/learners" || true
}
# poll_until_verdict KIND SECONDS: samples the learners until a verdict of KIND
poll_until_verdict() {
  n=0
  while [ "$n" -lt $(($2 * 4)) ]; do
    sample_learners
    c=$(verdicts_json 2>/dev/null | jq --arg k "$1" 'map(select(.kind == $k)) | length' 2>/dev/null || true)
    if [ -n "$c" ] && [ "$c" -gt 0 ]; then return 0; fi
    sleep 0.25; n=$((n + 1))
  done
  fail "no $1 verdict for job $JOB within $2 s: $(verdicts_json 2>&1)"
}
: > "$T/learners"
start_run -n 4 --nodes 4 $LEARN -- "$TRAIN" --steps 1000 --step-ms 20 --fault hog:rank=2:step=700
poll_until_verdict telemetry_anomaly 90
finish_run
expect_eq "exit status" "$RUN_RC" 0
v=$(verdicts_json)
expect_eq "verdict kinds" "$(echo "$v" | jq -c '[.[].kind]')" '["telemetry_anomaly"]'
t=$(echo "$v" | jq -c '.[0]')
expect_eq "kind" "$(echo "$t" | jq -r .kind)" telemetry_anomaly
expect_eq "status" "$(echo "$t" | jq -r .status)" advisory
expect_eq "ranks" "$(echo "$t" | jq -c .ranks)" "[2]"
expect_eq "hosts" "$(echo "$t" | jq -c .hosts)" '["n3"]'
expect_eq "top feature" "$(echo "$t" | jq -r '.evidence.top_features[0].feature')" cpu_utilisation
echo "$t" | jq -e '.evidence.score > .evidence.threshold' >/dev/null || fail "score not above threshold: $t"
# The same global model on every node, round after round: in every poll
# where all four nodes had applied the same round, they held the same model.
same=$(jq -c 'select(length == 4 and ([.[][1]] | unique | length) == 1)' "$T/learners")
rounds=$(echo "$same" | jq -s '[.[][0][1]] | unique | length')
[ "$rounds" -ge 5 ] || fail "only $rounds rounds seen on all four nodes at once: $(tail -3 "$T/learners")"
expect_eq "polls where nodes of one round hold different models" \
  "$(echo "$same" | jq -s '[.[] | select(([.[][2]] | unique | length) != 1)] | length')" 0
expect_eq "highest round seen at least 10" "$(jq -s '[.[][][1]] | max >= 10' "$T/learners")" true
assert_no_leftovers

JOB=$((JOB + 1))
: > "$T/learners"
start_run -n 4 --nodes 4 $LEARN -- "$TRAIN" --steps 1000 --step-ms 20
while kill -0 "$RUN_PID" 2>/dev/null; do sample_learners; sleep 0.25; done
finish_run
expect_eq "exit status (healthy)" "$RUN_RC" 0
expect_eq "the healthy run got past the warm-up (all four scoring)" \
  "$(jq -s '[.[] | select(length == 4 and all(.[]; .[3] == true))] | length > 0' "$T/learners")" true
expect_eq "verdicts (healthy)" "$(verdicts_json | jq length)" 0

# A warm-up under a saturated host: a busy loop on each core for the first
# half of the warm-up (until every node has applied round 6 of its 10), while
# the learner settles its threshold over loaded and quiet windows; then the
# host is quiet, and rank 2's hog starts at step 1300. The threshold frozen
# by the mixed warm-up comes down after it (the server says "(lowered)"),
# and rank 2 is named. The load is ended by the learners' round, not by a
# clock: 8 s of load covered a different share of the warm-up on a loaded
# CI host (all of it there: a warm-up loaded throughout learns the load as
# its normal and sets a low threshold with nothing to come down from, and
# the test failed), measured here, 3 of 3 such runs failed.
JOB=$((JOB + 1))
: > "$T/learners"
sh -c 'while :; do :; done' & HOG1=$!
sh -c 'while :; do :; done' & HOG2=$!
trap 'kill $HOG1 $HOG2 2>/dev/null || true; cleanup' EXIT
start_run -n 4 --nodes 4 $LEARN -- "$TRAIN" --steps 1800 --step-ms 20 --fault hog:rank=2:step=1300
n=0
until [ "$("$SCOUTCTL" status "$JOB" --json 2>/dev/null |
          jq '[.learners[].round] | length == 4 and min >= 6' 2>/dev/null)" = true ]; do
  kill -0 "$RUN_PID" 2>/dev/null || fail "the job ended before its learners reached round 6: $(tail -5 "$T/run.log")"
  [ "$n" -lt 240 ] || fail "the learners did not reach round 6 in 60 s under load: $("$SCOUTCTL" status "$JOB" --json 2>&1 | jq -c '.learners' 2>&1)"
  sleep 0.25; n=$((n + 1))
done
kill $HOG1 $HOG2; trap cleanup EXIT
poll_until_verdict telemetry_anomaly 120
v=$(verdicts_json)
stop_run
expect_eq "verdicts (loaded warm-up)" "$(echo "$v" | jq -c '[.[] | [.kind, .ranks]]')" '[["telemetry_anomaly",[2]]]'
# The deciding server's rounds (thresholds printed to 4 significant digits,
# so the one at the verdict is compared within 0.1%): the threshold frozen by the warm-up, and
# the one it came down to ("(lowered)").
low=$(awk '/learn round:/ && match($0, /threshold [0-9.e+-]+/) {
  t = substr($0, RSTART + 10, RLENGTH - 10)
  if ($0 ~ /\(lowered\)/ && !done) { print prev, t; done = 1 }
  prev = t }' "$T/run.log")
[ -n "$low" ] || fail "the threshold of a loaded warm-up never came down: $(grep 'learn round:' "$T/run.log" | head -14)"
at=$(echo "$v" | jq '.[0].evidence.threshold')
echo "threshold after the loaded warm-up, lowered to, at the verdict: $low $at"
echo "$low $at" | awk '{ exit !($2 < $1 && $3 <= $2 * 1.001) }' ||
  fail "thresholds (warm-up, lowered, at the verdict): $low $at"
pass "telemetry: CPU hog in rank 2 -> advisory telemetry_anomaly; same model on every node; healthy run clean; a warm-up under load lowered, then rank 2 named"
