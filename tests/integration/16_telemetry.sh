#!/bin/sh
# Federated telemetry outlier detection over 4 scoutds: every node applies
# the same global model each round; a CPU hog inside rank 2 (from step 700,
# after the warm-up) -> one advisory telemetry_anomaly verdict naming rank 2
# on n3 with cpu_utilisation as the top feature; a healthy run -> none.
# What the nodes' learners hold is read as a user reads it, from
# `scoutctl status JOB --json` (its "learners": node, round, model, scoring),
# polled while the job runs.
# scout-test: alone (the learner's warm-up and a CPU hog inside one rank: tests beside it load every rank's CPU features; issue: pass beside a CPU hog)
# Duration: about 50 s alone: two 1000-step runs; the learner needs its 10-round warm-up before the hog starts at step 700.
. "$top_srcdir/tests/integration/lib.sh"
LEARN="--scoutd-arg=--learn-window=0.5 --scoutd-arg=--learn-round=1 --scoutd-arg=--learn-warmup=10"
# sample_learners: one poll, one line per answer: [[node, round, model, scoring]...]
sample_learners() {
  "$SCOUTCTL" status "$JOB" --json 2>/dev/null |
    jq -c '[.learners[] | [.node, .round, .model, .scoring]] | sort' 2>/dev/null >> "$T/learners" || true
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
pass "telemetry: CPU hog in rank 2 -> advisory telemetry_anomaly; same model on every node; healthy run clean"
