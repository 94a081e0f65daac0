#!/bin/sh
# Pipeline parallelism (mpi_train --pipeline 3: activations forward and
# gradients back with blocking MPI_Send/MPI_Recv, then a gradient Allreduce
# among the 2 replicas of each stage), 6 ranks on 3 nodes: a healthy run
# gives no verdict (stages that differ are not compared); a stopped middle
# stage, a stage spinning outside MPI and a crashed stage are each named
# exactly; a slow stage among replicas is a late sender, an uneven stage of a
# single pipeline is not; a stopped 1-rank job is named on direct evidence.
# Duration: about 110 s with -j3: ten 6-rank jobs, each fault waits for its threshold and the straggler cases for their confirmations.
. "$top_srcdir/tests/integration/lib.sh"
THRESH=2
run() { next_job; start_run -n 6 --nodes 3 --stall-threshold $THRESH -- "$TRAIN" --pipeline 3 "$@"; }

run --steps 600
finish_run
expect_eq "healthy exit" "$RUN_RC" 0
expect_no_verdicts "healthy"

# Rank 4 (stage 1 of the second replica, node n3) stops.
run --steps 100000 --fault stop:rank=4:step=200
wait_rank_state 4 T
t_fault=$(date +%s.%N)
wait_for_verdict stall $((THRESH + 10))
delay=$(echo "$(date +%s.%N) - $t_fault" | bc)
echo "pipeline stall named ${delay}s after the stop (threshold ${THRESH}s)"
[ "$(echo "$delay <= $THRESH + 2 + 0.5" | bc)" = 1 ] || fail "verdict took ${delay}s; expected at most threshold + 2 s"
expect_verdict stall "[4]" '["n3"]'
verdicts_json | jq -r '.[0].evidence.chain[]' | grep -q "^rank 5 waits in MPI_Recv for 4" ||
  fail "chain does not show the next stage waiting: $(verdicts_json)"
stop_run

# Rank 1 (stage 1 of the first replica, node n1) spins outside MPI.
run --steps 100000 --fault hang:rank=1:step=200
wait_for_verdict hang $((THRESH + 10))
expect_verdict hang "[1]" '["n1"]'
stop_run

# Rank 2 (the last stage, node n2) crashes.
run --steps 100000 --fault crash:rank=2:step=200
finish_run
[ "$RUN_RC" -ne 0 ] || fail "crashed job reported success"
expect_verdict crash "[2]" '["n2"]'

# Three replicas of the 3-stage pipeline (9 ranks): a slow middle stage of
# the second replica is a late sender, compared only with the same stage of
# the other replicas, and so is a slow link at another middle stage; healthy,
# no stage is named for being a different stage.
next_job
start_run -n 9 --nodes 3 --stall-threshold $THRESH -- "$TRAIN" --pipeline 3 --steps 3000 --step-ms 5 --jitter 0.3
finish_run
expect_no_verdicts "9-rank healthy"
next_job
start_run -n 9 --nodes 3 --stall-threshold $THRESH -- "$TRAIN" --pipeline 3 --steps 100000 --step-ms 5 \
  --fault slow:rank=4:step=100:ms=3
wait_for_verdict straggler 60
sleep 4
expect_verdict straggler "[4]" '["n2"]'
expect_eq "source" "$(verdicts_json | jq -r '.[0].evidence.source')" p2p_late_sender
stop_run
# A slow link at rank 7 (each of its sends held 2 ms): the same stage of the
# third replica, node n3.
next_job
start_run -n 9 --nodes 3 --stall-threshold $THRESH -- "$TRAIN" --pipeline 3 --steps 100000 --step-ms 5 \
  --fault slowlink:rank=7:step=100:ms=2
wait_for_verdict straggler 60
sleep 4
expect_verdict straggler "[7]" '["n3"]'
stop_run
# A single pipeline has no equivalent senders: a slower stage is not named.
next_job
start_run -n 3 --nodes 3 --stall-threshold $THRESH -- "$TRAIN" --pipeline 3 --steps 2500 --step-ms 5 \
  --fault slow:rank=1:step=0:ms=3
finish_run
expect_no_verdicts "single pipeline with an uneven stage"

# One rank alone, stopped: no majority to ask, the stopped process is the evidence.
next_job
start_run -n 1 --nodes 1 --stall-threshold $THRESH -- "$TRAIN" --steps 100000 --fault stop:rank=0:step=100
wait_rank_state 0 T
wait_for_verdict stall $((THRESH + 10))
expect_verdict stall "[0]" '["n1"]'
verdicts_json | jq -r '.[0].evidence.rule' | grep -q "^direct evidence" || fail "not on direct evidence: $(verdicts_json)"
stop_run
assert_no_leftovers
pass "pipeline: healthy silent; stop, hang and crash of a stage each named exactly; a lone stopped rank named"
