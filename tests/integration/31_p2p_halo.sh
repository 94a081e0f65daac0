#!/bin/sh
# Point-to-point code (mpi_train --halo: a 2-D halo exchange with
# MPI_Irecv/MPI_Isend/MPI_Waitall and no collective until the end), 6 ranks
# on 3 nodes: a healthy run gives no verdict; a stopped rank is named by the
# wait-for graph within the threshold + 2 s and resolved when continued; a
# rank spinning outside MPI is a hang; a slow rank and a slow link are late
# senders; a crash, an MPI_Abort and a deadlock are each named exactly.
# Duration: about 100 s with -j3: nine 6-rank jobs, a healthy run and one per fault, each waiting for its threshold or confirmations.
. "$top_srcdir/tests/integration/lib.sh"
THRESH=2
run() { next_job; start_run -n 6 --nodes 3 --stall-threshold $THRESH -- "$TRAIN" --halo "$@"; }

# Healthy, with +-30% jitter per step and long enough for several
# late-sender windows.
run --steps 2500 --step-ms 5 --jitter 0.3
finish_run
expect_eq "healthy exit" "$RUN_RC" 0
expect_no_verdicts "healthy"

# SIGSTOP of rank 3 (node n2), inside the halo phase.
run --steps 100000 --fault stop:rank=3:step=200
wait_rank_state 3 T
t_fault=$(date +%s.%N)
wait_for_verdict stall $((THRESH + 10))
delay=$(echo "$(date +%s.%N) - $t_fault" | bc)
echo "halo stall named ${delay}s after the stop (threshold ${THRESH}s)"
[ "$(echo "$delay <= $THRESH + 2 + 0.5" | bc)" = 1 ] || fail "verdict took ${delay}s; expected at most threshold + 2 s"
expect_verdict stall "[3]" '["n2"]'
v=$(verdicts_json)
# Named on direct evidence (stopped for the threshold) or by the wait-for
# graph, whichever sees it first; the chain of waits is there either way.
echo "$v" | jq -r '.[0].evidence.rule' | grep -Eq "^(wait-for graph|direct evidence)" || fail "rule: $v"
echo "$v" | jq -r '.[0].evidence.chain[]' | grep -q "^rank 3 is .*process stopped (T)" || fail "chain: $v"
echo "$v" | jq -r '.[0].evidence.chain[]' | grep -Eq "^rank [0-9] waits in MPI_Waitall for .*3" || fail "chain: $v"
"$SCOUTCTL" status "$JOB" | grep -E "^ +3 .*MPI_Waitall|^ +[0-9] .*MPI_Waitall" >/dev/null || fail "status does not show the point-to-point waits: $("$SCOUTCTL" status "$JOB")"
kill -CONT "$(rank_pid 3)"
n=0; until [ "$(verdicts_json | jq -r '.[0].resolved_at')" != null ]; do
  n=$((n + 1)); [ $n -lt 50 ] || fail "stall not resolved after SIGCONT"; sleep 0.2; done
stop_run

# A rank that spins outside MPI.
run --steps 100000 --fault hang:rank=2:step=200
wait_for_verdict hang $((THRESH + 10))
expect_verdict hang "[2]" '["n2"]'
stop_run

# Ranks 2 and 3 each wait in MPI_Recv for the other: deadlock, both named.
run --steps 100000 --fault deadlock:rank=2:step=200
wait_for_verdict deadlock $((THRESH + 10))
expect_verdict deadlock "[2,3]" '["n2"]'
# Both calls with their lines and peers, and why, in words.
summary=$(verdicts_json | jq -r '.[0].evidence.summary')
echo "deadlock summary: $summary"
# (The ranks in MPI_Waitall wait for 2 and 3 with one tag each now, their
# sends done: the groups' tags differ, so each group says its tag.)
echo "$summary" | grep -Eq "rank 2 in MPI_Recv \(mpi_train.cpp:[0-9]+\) for rank 3( with tag 99)?, rank 3 in MPI_Recv \(mpi_train.cpp:[0-9]+\) for rank 2( with tag 99)?.*: each rank waits to receive from the next before it sends \(both sides receiving\)$" ||
  fail "deadlock summary: $summary"
stop_run

# A slow rank (2 ms more compute per 5 ms step: 1.4x) and a slow link (each
# send of rank 5 held 1 ms): late senders, named and nobody else.
for fault in slow:rank=3:step=100:ms=2 slowlink:rank=5:step=100:ms=1; do
  run --steps 100000 --step-ms 5 --fault "$fault"
  wait_for_verdict straggler 60
  r=${fault#*rank=}; r=${r%%:*}
  sleep 4  # a propagated wait state must not be named as well
  expect_verdict straggler "[$r]" "[\"n$((r / 2 + 1))\"]"
  expect_eq "$fault: source" "$(verdicts_json | jq -r '.[0].evidence.source')" p2p_late_sender
  stop_run
done

# Rank 4 aborts (SIGABRT): crash with the signal.
run --steps 100000 --fault crash:rank=4:step=200
finish_run
[ "$RUN_RC" -ne 0 ] || fail "crashed job reported success"
expect_verdict crash "[4]" '["n3"]'
expect_eq "crash signal" "$(verdicts_json | jq -r '.[0].evidence.culprits[0].signal')" SIGABRT

# Rank 1 calls MPI_Abort(3): abort, naming rank 1; the job exits 3.
run --steps 100000 --fault abort:rank=1:step=200
finish_run
expect_eq "aborted job exit" "$RUN_RC" 3
expect_verdict abort "[1]" '["n1"]'
expect_eq "abort summary" "$(verdicts_json | jq -r '.[0].evidence.summary')" "rank 1 called MPI_Abort with error code 3"
"$SCOUTCTL" query "$JOB" | grep -E "abort +attributed +1 +n1" >/dev/null || fail "text query: $("$SCOUTCTL" query "$JOB")"
assert_no_leftovers
pass "halo: healthy silent; stop, hang, deadlock, slow rank, slow link, crash and abort each named exactly"
