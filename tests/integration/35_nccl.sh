#!/bin/sh
# NCCL jobs without code changes: examples/nccl_train (NCCL on CUDA
# streams, built against the real nccl.h and cuda.h) under scout-run with
# the NCCL probe, on the stand-in libcuda.so.1 and libnccl.so.2 (no GPU
# here). Each fault is named exactly: a GPU that stops executing (gpu_hang,
# naming its PCI bus id), a stopped host (stall), a crash, a divergent
# collective, a slow GPU (straggler); a healthy run gives no verdict. The
# operation counts check that ncclBcast (NCCL calls ncclBroadcast through
# the PLT) is counted once. Pipelines (ncclSend/ncclRecv, with data-parallel
# replicas on split communicators) and tensor-parallel groups too.
# Duration: about 70 s with -j3: fourteen 4-rank NCCL jobs, one per fault kind and communicator layout.
. "$top_srcdir/tests/integration/lib.sh"
NTRAIN=$B/examples/nccl_train
[ -x "$NTRAIN" ] && [ -f "$B/probe/.libs/libscout_nccl.so" ] || { echo "SKIP: built without NCCL"; exit 77; }
export LD_LIBRARY_PATH=$B/tests/standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The stand-in NCCL's segments in this test's directory, not /dev/shm.
export SCOUT_STANDIN_NCCL_DIR=$T/nccl-segments
mkdir -p "$SCOUT_STANDIN_NCCL_DIR"
THRESH=2
nrun() { start_run -n 4 --nodes 2 --stall-threshold $THRESH --probe nccl -- "$NTRAIN" --step-ms 2 "$@"; }

# Healthy: the job completes, every rank's record was seen, no verdict.
nrun --steps 300
finish_run
expect_eq "healthy exit status" "$RUN_RC" 0
expect_eq "healthy ranks attached" "$(sqlite3 "$LEDGER" "select count(*) from ranks where job_id='$JOB'")" 4
expect_eq "healthy verdicts" "$(verdicts_json | jq length)" 0
assert_no_leftovers

# A GPU that stops (its stream waits forever) while its host goes on: at
# step 100 operation 112 (100 all-reduces and 11 broadcasts before it).
next_job
nrun --steps 4000 --fault gpuhang:rank=2:step=100
wait_for_verdict gpu_hang $((THRESH + 15))
expect_verdict gpu_hang "[2]" '["n2"]'
v=$(verdicts_json)
expect_eq "gpu_hang bus id" "$(echo "$v" | jq -r '.[0].evidence.culprits[0].gpu.bus_id')" 0000:12:00.0
expect_eq "gpu_hang operation" "$(echo "$v" | jq -r '.[0].evidence.operation')" 112
expect_eq "gpu_hang collective" "$(echo "$v" | jq -r '.[0].evidence.collective')" allreduce
expect_eq "gpu_hang waiting" "$(echo "$v" | jq -c '.[0].evidence.waiting')" "[0,1,3]"
"$SCOUTCTL" query "$JOB" | grep -E "gpu_hang +attributed +2 +n2" >/dev/null || fail "text query: $("$SCOUTCTL" query "$JOB")"
# The live view shows each rank's GPU and how far it got: rank 2's is behind.
st=$("$SCOUTCTL" status "$JOB") || fail "scoutctl status failed"
echo "$st" | grep -E "^ +2 .* GPU 0000:12:00.0 has not begun op 112 \(1 queued\)" >/dev/null || fail "status: $st"
echo "$st" | grep -E "^ +0 .* GPU 0000:10:00.0 inside op 112" >/dev/null || fail "status: $st"
stop_run

# A stopped host: stall, at its issue position (105 all-reduces, 11 broadcasts).
next_job
nrun --steps 4000 --fault stop:rank=1:step=105
wait_rank_state 1 T
wait_for_verdict stall $((THRESH + 15))
expect_verdict stall "[1]" '["n1"]'
expect_eq "stall position" "$(verdicts_json | jq -r '.[0].evidence.culprits[0].seq')" 116
stop_run

# A crash.
next_job
nrun --steps 4000 --fault crash:rank=3:step=50
wait_for_verdict crash $((THRESH + 15))
expect_verdict crash "[3]" '["n2"]'
expect_eq "crash signal (the NCCL probe's end event)" "$(verdicts_json | jq -r '.[0].evidence.culprits[0].signal')" SIGSEGV
stop_run

# A divergent collective (a broadcast where the others all-reduce).
next_job
nrun --steps 4000 --fault diverge:rank=0:step=60
wait_for_verdict divergence $((THRESH + 15))
expect_verdict divergence "[0]" '["n1"]'
stop_run

# A 3-stage pipeline (ncclSend/ncclRecv, the backward pair in a group): the
# middle stage's GPU stops; the wait-for graph (each GPU inside a receive
# from its neighbour) leads to it: gpu_hang, with the chain.
next_job
start_run -n 3 --nodes 3 --stall-threshold $THRESH --probe nccl -- "$NTRAIN" --step-ms 2 --pipeline 3 \
  --steps 40000 --fault gpuhang:rank=1:step=105
wait_for_verdict gpu_hang $((THRESH + 15))
expect_verdict gpu_hang "[1]" '["n2"]'
v=$(verdicts_json)
echo "$v" | jq -r '.[0].evidence.chain[]' | grep -q "^rank 0 waits in ncclRecv for 1" || fail "pipeline chain: $(echo "$v" | jq -c '.[0].evidence.chain')"
echo "$v" | jq -r '.[0].evidence.chain[]' | grep -q "^rank 2 waits in ncclRecv for 1" || fail "pipeline chain: $(echo "$v" | jq -c '.[0].evidence.chain')"
expect_eq "pipeline gpu_hang bus id" "$(echo "$v" | jq -r '.[0].evidence.culprits[0].gpu.bus_id')" 0000:11:00.0
stop_run
# Two 3-stage pipelines whose stages' replicas all-reduce on communicators
# made with ncclCommSplit (pipeline x data parallel, 6 ranks): the GPU of
# rank 4 stops; ranks 3 and 5 wait for it, the other pipeline waits in the
# data-parallel all-reduces: gpu_hang on rank 4 alone.
next_job
start_run -n 6 --nodes 3 --stall-threshold $THRESH --probe nccl -- "$NTRAIN" --step-ms 2 --pipeline 3 \
  --steps 40000 --fault gpuhang:rank=4:step=105
wait_for_verdict gpu_hang $((THRESH + 15))
sleep 2  # another verdict would come now
expect_verdict gpu_hang "[4]" '["n3"]'
stop_run
# Two tensor-parallel groups of 3 (split communicators) and a world
# all-reduce per step: rank 4's GPU stops inside its group's sequence while
# the other group waits in the world all-reduce; positions are compared per
# communicator: gpu_hang on rank 4 through its group.
next_job
start_run -n 6 --nodes 3 --stall-threshold $THRESH --probe nccl -- "$NTRAIN" --step-ms 2 --tensor 3 \
  --steps 40000 --fault gpuhang:rank=4:step=105
wait_for_verdict gpu_hang $((THRESH + 15))
sleep 2
expect_verdict gpu_hang "[4]" '["n3"]'
expect_eq "tensor-parallel waiting" "$(verdicts_json | jq -c '.[0].evidence.waiting')" "[3,5]"
stop_run
# ... and a stopped last stage: stall.
next_job
start_run -n 3 --nodes 3 --stall-threshold $THRESH --probe nccl -- "$NTRAIN" --step-ms 2 --pipeline 3 \
  --steps 40000 --fault stop:rank=2:step=105
wait_rank_state 2 T
wait_for_verdict stall $((THRESH + 15))
expect_verdict stall "[2]" '["n3"]'
stop_run

# A slow GPU: 15 ms more per step on rank 1's stream.
next_job
nrun --steps 3000 --fault gpuslow:rank=1:step=20:ms=15
wait_for_verdict straggler 40
expect_verdict straggler "[1]" '["n1"]'
stop_run
assert_no_leftovers
pass "nccl: gpu_hang, stall, crash, divergence and straggler named on NCCL ranks, a pipeline's stopped GPU and stopped stage too; healthy run clean"
