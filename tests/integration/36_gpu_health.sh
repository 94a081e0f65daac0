#!/bin/sh
# GPU health read directly from NVML (the stand-in libnvidia-ml.so.1, values
# injected at run time): during an NCCL job, XID 79 and a lost GPU on rank
# 2's GPU give attributed gpu_health verdicts naming node n2, the bus id and
# rank 2; XID 63 on rank 0's GPU an advisory one on n1; a fatal condition on
# a GPU no rank of the job uses is not the job's verdict. (Root's own NVML
# read before a drain: test 37.)
. "$top_srcdir/tests/integration/lib.sh"
use_nccl_standin
start_run -n 4 --nodes 2 --stall-threshold 2 --probe nccl --scoutd-arg=--gpu-health-interval=1 -- \
  "$NTRAIN" --steps 100000 --step-ms 2
# Running, records attached (each scoutd learned its ranks' GPUs), then the faults.
n=0
until [ "$(sqlite3 "$LEDGER" "select count(*) from ranks where job_id='$JOB'" 2>/dev/null)" = 4 ]; do
  n=$((n + 1)); [ $n -lt 200 ] || fail "ranks never attached"; sleep 0.1
done
sleep 2
printf '0000:12:00.0 xid=79 lost=1\n0000:10:00.0 xid=63\n0000:17:00.0 ecc_uncorrected=4\n' > "$SCOUT_STANDIN_NVML"
n=0
while [ "$(verdicts_json | jq 'map(select(.kind == "gpu_health")) | length')" -lt 3 ]; do
  n=$((n + 1)); [ $n -lt 100 ] || fail "expected 3 gpu_health verdicts: $(verdicts_json)"; sleep 0.2
done
sleep 3  # anything more would show now
v=$(verdicts_json)
expect_eq "verdicts" "$(echo "$v" | jq -c '[.[] | .kind] | unique')" '["gpu_health"]'
expect_eq "gpu_health count" "$(echo "$v" | jq length)" 3
lost=$(echo "$v" | jq -c '.[] | select(.evidence.metric == "gpu_lost")')
xid=$(echo "$v" | jq -c '.[] | select(.evidence.metric == "xid" and .evidence.value == 79)')
warn=$(echo "$v" | jq -c '.[] | select(.evidence.metric == "xid" and .evidence.value == 63)')
for x in "$lost" "$xid"; do
  expect_eq "fatal status" "$(echo "$x" | jq -r .status)" attributed
  expect_eq "fatal ranks" "$(echo "$x" | jq -c .ranks)" "[2]"
  expect_eq "fatal hosts" "$(echo "$x" | jq -c .hosts)" '["n2"]'
  expect_eq "fatal bus id" "$(echo "$x" | jq -r .evidence.gpu.bus_id)" 0000:12:00.0
done
expect_eq "warning status" "$(echo "$warn" | jq -r .status)" advisory
expect_eq "warning ranks" "$(echo "$warn" | jq -c .ranks)" "[0]"
expect_eq "warning hosts" "$(echo "$warn" | jq -c .hosts)" '["n1"]'
echo "$v" | jq -e 'map(select(.evidence.gpu.bus_id == "0000:17:00.0")) | length == 0' >/dev/null ||
  fail "a GPU the job does not use was reported: $v"
"$SCOUTCTL" query "$JOB" | grep -E "gpu_health +attributed +2 +n2 .*GPU 0000:12:00.0" >/dev/null ||
  fail "text query: $("$SCOUTCTL" query "$JOB")"
stop_run
assert_no_leftovers
pass "gpu_health: XID 79 and a lost GPU named on n2 (rank 2, 0000:12:00.0), XID 63 advisory on n1, another job's GPU left out"
