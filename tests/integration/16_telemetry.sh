#!/bin/sh
# Federated telemetry outlier detection over 4 scoutds: every node applies
# the same global model each round; a CPU hog inside rank 2 (from step 700,
# after the warm-up) -> one advisory telemetry_anomaly verdict naming rank 2
# on n3 with cpu_utilisation as the top feature; a healthy run -> none; a
# warm-up half under a saturated host (a busy loop per core) -> the hog in
# rank 2 is still named, under a threshold never above the frozen one.
# What the nodes' learners hold is read as a user reads it, from
# `scoutctl status JOB --json` (its "learners": node, round, model, scoring),
# polled while the job runs.
# scout-test: alone (the learner's warm-up and a CPU hog inside one rank: tests beside it load every rank's CPU features; issue: pass beside a CPU hog)
# Duration: about 80 s alone: two 1000-step runs and a 1600-step one; the learner needs its 10-round warm-up before the hog starts at step 700 (1100 after a loaded warm-up).
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
  fail "no $1 verdict for job $JOB within $2 s: $(verdicts_json 2>&1); what the learners said: $(grep -E 'telemetry:|injected' "$T/run.log" | head -8)"
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
# half of the warm-up (until every node has applied round 6 of its 10),
# while the learner settles its threshold over loaded and quiet windows;
# then the host is quiet, and rank 2's hog starts at step 1100: it is named,
# and nothing else is. The threshold at the verdict is never above the one
# the warm-up froze (it may only come down: the server says "(lowered)").
# Whether it comes down here depends on how the loaded windows score
# against the quiet ones (the estimate moves in bins a third apart: of the
# runs measured here, some froze at 0.36 and came down to 0.27, some froze
# at 0.47 and stayed, the hog named either way), so this test asserts what
# the user sees (the hog named after a loaded warm-up, never a higher
# threshold) and the unit tests assert the lowering rule itself
# (test_fed_learner: a saturated warm-up, then three quiet rounds). The
# load is ended by the learners' round, not by a clock: 8 s of load covered
# a different share of the warm-up on a loaded CI host.
JOB=$((JOB + 1))
: > "$T/learners"
sh -c 'while :; do :; done' & HOG1=$!
sh -c 'while :; do :; done' & HOG2=$!
trap 'kill $HOG1 $HOG2 2>/dev/null || true; cleanup' EXIT
start_run -n 4 --nodes 4 $LEARN -- "$TRAIN" --steps 1600 --step-ms 20 --fault hog:rank=2:step=1100
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
# The threshold the warm-up froze, as the learners show it in `scoutctl
# status JOB --json` (polled above): the highest after the warm-up (rounds
# 11 on), since it may only come down.
frozen=$(jq -s '[.[][] | select(.[1] >= 11) | .[4]] | max // empty' "$T/learners")
[ -n "$frozen" ] || fail "no learner seen after the warm-up: $(tail -3 "$T/learners")"
at=$(echo "$v" | jq '.[0].evidence.threshold')
lowered=$(grep -c 'learn round:.*(lowered)' "$T/run.log" || true)
echo "threshold frozen by the loaded warm-up, at the verdict: $frozen $at (lowered $lowered times)"
echo "$frozen $at" | awk '{ exit !($1 > 0 && $2 <= $1 * 1.001) }' ||
  fail "the threshold at the verdict ($at) is above the one the warm-up froze ($frozen)"
pass "telemetry: CPU hog in rank 2 -> advisory telemetry_anomaly; same model on every node; healthy run clean; after a warm-up under load rank 2 named, the threshold never above the frozen one"
