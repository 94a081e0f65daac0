#!/bin/sh
# Collective-output signatures: with every output signed, rank 2's gradient
# Allreduce at step 50 delivers a flipped bit (mpi_train --fault corrupt) ->
# one sdc verdict, source collective_output, naming rank 2 on n3; a healthy
# run with every output signed -> no sdc verdict.
. "$top_srcdir/tests/integration/lib.sh"
start_run -n 4 --nodes 4 --outsig-every 1 --scoutd-arg=--outsig-period=0.5 -- \
  "$TRAIN" --steps 800 --fault corrupt:rank=2:step=50
finish_run
expect_eq "exit status" "$RUN_RC" 0
grep -q "done: 800 steps on 4 ranks" "$T/run.log" || fail "training did not finish"
v=$(verdicts_json)
expect_eq "verdicts" "$(echo "$v" | jq length)" 1
expect_eq "kind" "$(echo "$v" | jq -r '.[0].kind')" sdc
expect_eq "status" "$(echo "$v" | jq -r '.[0].status')" attributed
expect_eq "source" "$(echo "$v" | jq -r '.[0].evidence.source')" collective_output
expect_eq "ranks" "$(echo "$v" | jq -c '.[0].ranks')" "[2]"
expect_eq "hosts" "$(echo "$v" | jq -c '.[0].hosts')" '["n3"]'
expect_eq "collective" "$(echo "$v" | jq -r '.[0].evidence.collective')" allreduce
expect_eq "agreeing ranks" "$(echo "$v" | jq -r '.[0].evidence.agreeing_ranks')" 3
"$SCOUTCTL" query "$JOB" | grep -E "^[0-9]+ +sdc +attributed +2 +n3 .*allreduce call" >/dev/null ||
  fail "query text: $("$SCOUTCTL" query "$JOB")"
assert_no_leftovers

JOB=$((JOB + 1))
start_run -n 4 --nodes 4 --outsig-every 1 --scoutd-arg=--outsig-period=0.5 -- "$TRAIN" --steps 800
finish_run
expect_eq "exit status (healthy)" "$RUN_RC" 0
expect_eq "verdicts (healthy)" "$(verdicts_json | jq length)" 0
# Durability at stop: with the default comparison period (60 s) a corruption
# near the end of a short job would never be compared; the stop round
# compares what is pending.
JOB=$((JOB + 1))
start_run -n 4 --nodes 4 --outsig-every 1 -- "$TRAIN" --steps 300 --fault corrupt:rank=1:step=230
finish_run
expect_eq "exit status (late corruption)" "$RUN_RC" 0
v=$(verdicts_json)
expect_eq "late corruption: verdicts" "$(echo "$v" | jq length)" 1
expect_eq "late corruption: kind and rank" "$(echo "$v" | jq -c '[.[0].kind, .[0].ranks]')" '["sdc",[1]]'
assert_no_leftovers
pass "collective output: rank 2's corrupted allreduce output named; healthy run clean; a late one named at stop"
