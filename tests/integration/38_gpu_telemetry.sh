#!/bin/sh
# GPU telemetry in the federated detector: during an NCCL job (stand-in
# NVML, values injected at run time) rank 1's GPU drops from 90% to 5%
# utilisation and from 400 W to 80 W after the learner's warm-up -> one
# advisory telemetry_anomaly naming rank 1 on n1 with a GPU feature on top;
# every scoutd reports the default aggregation (personalised) and a personal
# memory in `scoutctl status` (text and --json).
. "$top_srcdir/tests/integration/lib.sh"
use_nccl_standin
LEARN="--scoutd-arg=--learn-window=0.5 --scoutd-arg=--learn-round=1 --scoutd-arg=--learn-warmup=10"
start_run -n 4 --nodes 2 --probe nccl $LEARN -- "$NTRAIN" --steps 100000 --step-ms 10
n=0
until grep -q "n1: learn round 14 applied" "$T/run.log" 2>/dev/null; do
  n=$((n + 1)); [ $n -lt 600 ] || fail "the learner never got past its warm-up: $(tail -5 "$T/run.log")"; sleep 0.1
done
expect_eq "verdicts before the fault" "$(verdicts_json | jq -c '[.[] | [.kind, .status, .ranks, .evidence.source // .evidence.rule]]')" "[]"
st=$("$SCOUTCTL" status "$JOB" --json)
expect_eq "learners (one per scoutd)" "$(echo "$st" | jq '.learners | length')" 2
echo "$st" | jq -e '.learners | all(.aggregation == "personalised" and .personal_memory == true and .scoring == true)' >/dev/null ||
  fail "a node does not score with its personal memory: $(echo "$st" | jq -c .learners)"
txt=$("$SCOUTCTL" status "$JOB")
for n in n1 n2; do
  echo "$txt" | grep -qE "^learner $n: round [0-9]+ \| personalised, own memory \| threshold [0-9.e+-]+ \| scoring$" ||
    fail "status text has no learner line for $n: $txt"
done
printf '0000:11:00.0 util=5 power=80\n' > "$SCOUT_STANDIN_NVML"
wait_for_verdict telemetry_anomaly 60
sleep 2
v=$(verdicts_json)
stop_run
expect_eq "verdict kinds" "$(echo "$v" | jq -c '[.[].kind]')" '["telemetry_anomaly"]'
t=$(echo "$v" | jq -c '.[0]')
expect_eq "status" "$(echo "$t" | jq -r .status)" advisory
expect_eq "ranks" "$(echo "$t" | jq -c .ranks)" "[1]"
expect_eq "hosts" "$(echo "$t" | jq -c .hosts)" '["n1"]'
top=$(echo "$t" | jq -r '.evidence.top_features[0].feature')
case $top in gpu_utilisation|gpu_power) ;; *) fail "top feature $top; expected a GPU one: $t" ;; esac
assert_no_leftovers
pass "GPU telemetry: rank 1's GPU idles after the warm-up -> telemetry_anomaly on n1 ($top); personalised memory on every node"
