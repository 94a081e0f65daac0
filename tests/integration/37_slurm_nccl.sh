#!/bin/sh
# NCCL jobs under srun --scout=on on the three-node cluster (the stand-in
# libcuda/libnccl/libnvidia-ml, no GPU here): the plugin preloads the NCCL
# probe (nccl_probe=) beside the MPI one into an unmodified NCCL program.
# 1. A GPU that stops on n3 gives gpu_hang naming rank 2, n3 and the GPU;
#    root's own NVML read finds nothing wrong with that GPU, so n3's epilog
#    keeps it in service as a suspect (one user's word does not drain).
# 2. The GPU of n3 falls off the bus (XID 79, lost) during a healthy job:
#    gpu_health on n3 from its scoutd, and n3's epilog drains n3 after its
#    own NVML read confirms the GPU is lost; n1 and n2 stay in service.
# The site's plugstack learn_aggregation= reaches every companion scoutd.
# Duration: about 75 s with -j3: three jobs on a three-node Slurm cluster started for the test, each through its epilogs.
. "$top_srcdir/tests/integration/slurm_lib.sh"
NTRAIN=$B/examples/nccl_train
[ -x "$NTRAIN" ] && [ -f "$B/probe/.libs/libscout_nccl.so" ] || { echo "SKIP: built without NCCL"; exit 77; }
# /tmp is node-local: each node's NVML stand-in reads its own values file.
EPILOG_ENV="LD_LIBRARY_PATH=$B/tests/standin SCOUT_STANDIN_NVML=/tmp/nvml.txt " \
  start_cluster nccl_probe=$B/probe/.libs/libscout_nccl.so blame_jobs=50 blame_users=50 learn_aggregation=clustered
export LD_LIBRARY_PATH=$B/tests/standin SCOUT_STANDIN_NVML=/tmp/nvml.txt SCOUT_STANDIN_NCCL_DIR=$CL.home  # her home: her ranks write there
for n in n1 n2 n3; do on "$n" sh -c ': > /tmp/nvml.txt'; done

# 1. gpuhang on rank 2 (n3).
srun --scout=on -N3 -n3 "$NTRAIN" --id-file "$CL.home/nccl.id.1" --steps 100000 --step-ms 2 \
  --fault gpuhang:rank=2:step=100 > "$T/run.log" 2>&1 &
RUN_PID=$!
J=$(current_job)
wait_job_verdict "$J" gpu_hang 40 n1
pgrep -f -- "scoutd .*--learn-aggregation clustered" >/dev/null ||
  fail "the companions were not started with the site's learn_aggregation: $(pgrep -af scoutd)"
v=$(query_on n1 "$J" --json)
expect_eq "gpu_hang ranks" "$(echo "$v" | jq -c '[.[] | select(.kind == "gpu_hang")][0].ranks')" "[2]"
expect_eq "gpu_hang hosts" "$(echo "$v" | jq -c '[.[] | select(.kind == "gpu_hang")][0].hosts')" '["n3"]'
expect_eq "gpu_hang bus id" "$(echo "$v" | jq -r '[.[] | select(.kind == "gpu_hang")][0].evidence.culprits[0].gpu.bus_id')" 0000:10:00.0
grep -q LD_PRELOAD=.*libscout_nccl.so "/proc/$(echo "$v" | jq '[.[] | select(.kind == "gpu_hang")][0].evidence.culprits[0].pid')/environ" 2>/dev/null ||
  tr '\0' '\n' < "/proc/$(echo "$v" | jq '[.[] | select(.kind == "gpu_hang")][0].evidence.culprits[0].pid')/environ" | grep -q '^LD_PRELOAD=.*libscout_nccl.so' ||
  fail "the plugin did not preload the NCCL probe"
scancel "$J"
wait "$RUN_PID" 2>/dev/null || true
RUN_PID=
wait_epilog "$J" n3
expect_eq "n3 decision after gpu_hang" "$(sqlite3 "$SITE" "select decision from gating where job_id='$J' and node='n3'")" suspect
sqlite3 "$SITE" "select evidence from gating where job_id='$J' and node='n3'" | jq -e '.node_check[] | select(.check == "gpu" and .result == "pass")' >/dev/null ||
  fail "root's NVML check did not run: $(sqlite3 "$SITE" "select evidence from gating where job_id='$J' and node='n3'")"
expect_eq "n3 state after gpu_hang" "$(node_state n3)" idle

# 2. n3's GPU is lost during a healthy job.
srun --scout=on -N3 -n3 "$NTRAIN" --id-file "$CL.home/nccl.id.2" --steps 6000 --step-ms 2 > "$T/run.log" 2>&1 &
RUN_PID=$!
J=$(current_job)
n=0
until [ "$(query_on n1 "$J" --json 2>/dev/null | jq length 2>/dev/null)" = 0 ] && on n3 sqlite3 -readonly "$SPOOL/$J/$J.db" "select count(*) from ranks where job_id='$J'" 2>/dev/null | grep -qx 1; do
  n=$((n + 1)); [ $n -lt 200 ] || fail "job $J never started on n3"; sleep 0.1
done
sleep 2
on n3 sh -c 'printf "0000:10:00.0 xid=79 lost=1\n" > /tmp/nvml.txt'
wait_job_verdict "$J" gpu_health 40 n1
v=$(query_on n1 "$J" --json)
expect_eq "gpu_health hosts" "$(echo "$v" | jq -c '[.[] | select(.kind == "gpu_health" and .evidence.metric == "gpu_lost")][0].hosts')" '["n3"]'
expect_eq "gpu_health ranks" "$(echo "$v" | jq -c '[.[] | select(.kind == "gpu_health" and .evidence.metric == "gpu_lost")][0].ranks')" "[2]"
wait "$RUN_PID" || fail "the training failed: $(tail -5 "$T/run.log")"
RUN_PID=
for n in n1 n2 n3; do wait_epilog "$J" "$n"; done
expect_eq "decisions" "$(sqlite3 "$SITE" "select node||':'||decision from gating where job_id='$J' and decision != 'error' order by node" | tr '\n' ' ')" "n1:keep n2:keep n3:drain "
sqlite3 "$SITE" "select reason from gating where job_id='$J' and node='n3'" | grep -q "root.s node check failed: gpu: NVML read by root: .*(index 0): NVML reports the GPU lost" ||
  fail "the drain does not rest on root's NVML read: $(sqlite3 "$SITE" "select reason from gating where job_id='$J' and node='n3'")"
expect_eq "n3 state" "$(node_state n3)" drained
expect_eq "n1 state" "$(node_state n1)" idle
pass "slurm nccl: gpu_hang on n3 kept as suspect (root's NVML clean); a lost GPU drains n3 after root's NVML read"
