#!/bin/sh
# Federated telemetry outlier detection over 4 scoutds: every node applies
# the same global model each round; a CPU hog inside rank 2 (from step 700,
# after the warm-up) -> one advisory telemetry_anomaly verdict naming rank 2
# on n3 with cpu_utilisation as the top feature; a healthy run -> none.
. "$top_srcdir/tests/integration/lib.sh"
LEARN="--scoutd-arg=--learn-window=0.5 --scoutd-arg=--learn-round=1 --scoutd-arg=--learn-warmup=10"
start_run -n 4 --nodes 4 $LEARN -- "$TRAIN" --steps 1000 --step-ms 20 --fault hog:rank=2:step=700
wait_for_verdict telemetry_anomaly 90
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
# The same global model on every node, round after round.
rounds=$(grep -c "n1: learn round [0-9]* applied" "$T/run.log")
[ "$rounds" -ge 10 ] || fail "only $rounds learn rounds"
# Log lines: "<time> <level> scoutd: nK: learn round R applied: model H".
applied() { grep "learn round [0-9]* applied" "$T/run.log" | sed 's/^.* scoutd: //'; }
differing=$(applied | awk '{print $4, $7}' | sort -u | awk '{print $1}' | uniq -d | wc -l)
expect_eq "rounds where nodes hold different models" "$differing" 0
expect_eq "nodes per round" "$(applied | awk '{print $4}' | sort | uniq -c | awk '{print $1}' | sort -u | tr '\n' ' ')" "4 "
grep -q "bytes in, [0-9]* bytes out" "$T/run.log" || fail "bytes per round not logged"
assert_no_leftovers

JOB=$((JOB + 1))
start_run -n 4 --nodes 4 $LEARN -- "$TRAIN" --steps 1000 --step-ms 20
finish_run
expect_eq "exit status (healthy)" "$RUN_RC" 0
grep -q "learn round 1[5-9] applied\|learn round 2[0-9] applied" "$T/run.log" || fail "the healthy run did not get past the warm-up"
expect_eq "verdicts (healthy)" "$(verdicts_json | jq length)" 0
pass "telemetry: CPU hog in rank 2 -> advisory telemetry_anomaly; same model on every node; healthy run clean"
