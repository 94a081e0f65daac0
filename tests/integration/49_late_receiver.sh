#!/bin/sh
# Late receivers (issue 36 part 4): three independent 2-stage pipelines
# (mpi_train --pipeline 2 --p2p-only, 6 ranks on 3 nodes) sending 256 KiB
# activations, above the eager limit, so a send waits in MPI_Send until its
# receiver posts the receive. Healthy: no verdict. Rank 3 (the second
# pipeline's receiving stage, node n2) made 3 ms slower per 5 ms step from
# step 200: rank 2 waits for it in MPI_Send, not in a receive; rank 3 is
# named a straggler by its senders' send waits (source p2p_late_receiver),
# and rank 2, which waits for it, is not named.
# Duration: about 35 s with -j3: two 6-rank jobs.
. "$top_srcdir/tests/integration/lib.sh"
THRESH=2
# Point-to-point windows every 0.25 s (half the output-signature period):
# the healthy run is compared in about 40 windows, not 3.
run() { next_job; start_run -n 6 --nodes 3 --stall-threshold $THRESH --scoutd-arg=--outsig-period=0.5 -- \
  "$TRAIN" --pipeline 2 --p2p-only --msg-kb 256 --step-ms 5 "$@"; }

run --steps 2000 --jitter 0.2
finish_run
expect_eq "healthy exit" "$RUN_RC" 0
expect_no_verdicts "healthy"

run --steps 100000 --fault slow:rank=3:step=200:ms=3
wait_for_verdict straggler 60
sleep 2  # another verdict would come now
expect_verdict straggler "[3]" '["n2"]'
v=$(verdicts_json)
expect_eq "source" "$(echo "$v" | jq -r '.[0].evidence.source')" p2p_late_receiver
expect_eq "waited for by" "$(echo "$v" | jq -c '.[0].evidence.waited_by | keys')" '["2"]'
# The probe timed the sends: rank 2 waited more than a millisecond per message.
expect_eq "late by more than 1 ms" "$(echo "$v" | jq '.[0].evidence.culprits[0].late_s > 0.001')" true
"$SCOUTCTL" query "$JOB" | grep -E "straggler +attributed +3 +n2" >/dev/null || fail "text query: $("$SCOUTCTL" query "$JOB")"
stop_run
assert_no_leftovers
pass "late receivers: healthy pipelines silent; a rank late to receive, waited for in MPI_Send, named by its senders' waits"
