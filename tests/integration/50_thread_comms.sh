#!/bin/sh
# Threaded programs (MPI_THREAD_MULTIPLE), one communicator per thread:
# progress is followed per communicator and per thread (record version 8).
# Four threads per rank; rank 2's thread 1 stops calling MPI at iteration
# 300 (it loops outside MPI) while its other threads, and every other rank's,
# keep calling MPI on their own communicators: rank 2 is named `hang` on
# thread 1's communicator, at its collective 301, with what each of its
# threads is in, while the job still moves. Two threads with point-to-point
# exchanges beside the collectives: healthy runs are silent. A rank whose one
# thread computes 8 times longer is named a straggler.
. "$top_srcdir/tests/integration/lib.sh"
MT=$B/tests/integration/mt_allreduce
for i in 1 2 3; do
  next_job
  start_run -n 4 --nodes 2 --stall-threshold 2 -- "$MT" --threads 2 --p2p --iters 400
  finish_run
  expect_eq "healthy run $i exit" "$RUN_RC" 0
  expect_eq "healthy run $i verdicts" "$(verdicts_json | jq -c '[.[].kind]')" "[]"
done

next_job
start_run -n 4 --nodes 2 --stall-threshold 2 -- "$MT" --threads 4 --iters 1000000 --hang 2:1:300
wait_for_verdict hang 30
# The job still moves: rank 0's collectives go on after the verdict.
seq_of() { "$SCOUTCTL" status "$JOB" --json 2>/dev/null | jq '[.. | objects | select(.rank == 0) | .seq] | first // 0'; }
s1=$(seq_of); sleep 1; s2=$(seq_of)
[ "$s2" -gt "$s1" ] || fail "rank 0 stopped moving after the verdict: seq $s1 then $s2"
expect_verdict hang "[2]" '["n2"]'
v=$(verdicts_json)
expect_eq "collective on the communicator" "$(echo "$v" | jq -c '.[0].evidence | [.communicator_collective, .collective]')" '[301,"allreduce"]'
expect_eq "waiting ranks" "$(echo "$v" | jq -c '.[0].evidence.waiting')" '[0,1,3]'
expect_eq "rank 2 entered on that communicator" "$(echo "$v" | jq '.[0].evidence.culprits[0].communicator_entered')" 300
expect_eq "rank 2's threads" "$(echo "$v" | jq '.[0].evidence.culprits[0].threads | length')" 4
echo "$v" | jq -r '.[0].evidence.culprits[0].threads[]' | grep -q "is outside MPI" ||
  fail "rank 2's hung thread is not shown outside MPI: $(echo "$v" | jq -c '.[0].evidence.culprits[0].threads')"
stop_run

# Rank 3's thread 1 computes 8 times longer between its collectives (its
# thread 0 does not): rank 3 is named a straggler, and only it.
next_job
start_run -n 4 --nodes 2 --stall-threshold 2 -- "$MT" --threads 2 --iters 6000 --slow 3:1:8
finish_run
expect_eq "slow thread run exit" "$RUN_RC" 0
v=$(verdicts_json)
expect_eq "slow thread verdicts" "$(echo "$v" | jq -c '[.[] | [.kind, .status, .ranks]] | unique')" '[["straggler","attributed",[3]]]'
assert_no_leftovers
pass "threads: a thread's communicator hang named (rank 2, collective 301) while the other threads move; a slow thread's rank named a straggler; healthy threaded runs silent"
