#!/bin/sh
# Rank 6 calls Barrier where everyone else calls Allreduce: divergence
# attributed to rank 6 on n4 by the strict majority of fingerprints; the
# verdict says which ranks are in which call at which line, and why.
. "$top_srcdir/tests/integration/lib.sh"
start_run -n 8 --nodes 4 --stall-threshold 2 -- "$TRAIN" --steps 300 --fault diverge:rank=6:step=30
wait_for_verdict divergence 30
v=$(verdicts_json)
expect_eq "verdict count" "$(echo "$v" | jq length)" 1
expect_eq "status" "$(echo "$v" | jq -r '.[0].status')" attributed
expect_eq "ranks" "$(echo "$v" | jq -c '.[0].ranks')" "[6]"
expect_eq "hosts" "$(echo "$v" | jq -c '.[0].hosts')" '["n4"]'
expect_eq "culprit collective" "$(echo "$v" | jq -r '.[0].evidence.culprits[0].collective')" barrier
expect_eq "majority collective" "$(echo "$v" | jq -r '.[0].evidence.majority_collective')" allreduce
# Which ranks are in which call, at which line of mpi_train.cpp, and why.
summary=$(echo "$v" | jq -r '.[0].evidence.summary')
echo "summary: $summary"
echo "$summary" | grep -Eq "^ranks 0-5,7 in MPI_Allreduce \(mpi_train.cpp:[0-9]+\), rank 6 in MPI_Barrier \(mpi_train.cpp:[0-9]+\) at collective [0-9]+ of MPI_COMM_WORLD: the ranks call collectives in a different order$" ||
  fail "summary: $summary"
kill -INT "$RUN_PID"
finish_run
assert_no_leftovers
pass "diverge: attributed to rank 6 on n4"
