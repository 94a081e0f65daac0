#!/bin/sh
# A rank stuck in a write that never completes (a FIFO nobody reads) while
# its peers wait: an I/O straggler verdict naming it, with the system call.
. "$top_srcdir/tests/integration/lib.sh"
start_run -n 4 --nodes 2 --stall-threshold 2 -- "$TRAIN" --steps 300 --fault io:rank=2:step=30
wait_for_verdict straggler 30
v=$(verdicts_json)
expect_eq "verdicts" "$(echo "$v" | jq length)" 1
expect_eq "type" "$(echo "$v" | jq -r '.[0].evidence.type')" io
expect_eq "ranks" "$(echo "$v" | jq -c '.[0].ranks')" "[2]"
expect_eq "hosts" "$(echo "$v" | jq -c '.[0].hosts')" '["n2"]'
expect_eq "syscall" "$(echo "$v" | jq -r '.[0].evidence.culprits[0].syscall')" write
kill -INT "$RUN_PID"
finish_run
assert_no_leftovers
pass "io: rank 2 blocked in write named as an I/O straggler"
