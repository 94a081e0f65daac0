#!/bin/sh
# Communication stragglers on a 3x4 grid (rows of 4, columns of 3). The
# probe's test-only delay makes rank 5 slow inside its row and column
# collectives (a slow link at its endpoint; its compute is unchanged): the
# slow row and column meet at rank 5, whose host is attributed. Delaying its
# row only does not single out a rank: inconclusive, no culprit.
. "$top_srcdir/tests/integration/lib.sh"
SCOUT_PROBE_TEST_DELAY="rank=5,comm_size=3+4,ms=15,after=150" \
  start_run -n 12 --nodes 3 -- "$TRAIN" --grid 3x4 --steps 250
finish_run
expect_eq "exit status" "$RUN_RC" 0
v=$(verdicts_json)
c=$(echo "$v" | jq '[.[] | select(.kind == "straggler" and .evidence.type == "communication")]')
expect_eq "communication verdicts" "$(echo "$c" | jq length)" 1
expect_eq "status" "$(echo "$c" | jq -r '.[0].status')" attributed
expect_eq "ranks" "$(echo "$c" | jq -c '.[0].ranks')" "[5]"
expect_eq "hosts" "$(echo "$c" | jq -c '.[0].hosts')" '["n2"]'
expect_eq "slow communicators" "$(echo "$c" | jq '.[0].evidence.slow_communicators | length')" 2
expect_eq "compute stragglers" "$(echo "$v" | jq '[.[] | select(.evidence.type == "compute")] | length')" 0

JOB=$((JOB + 1))
SCOUT_PROBE_TEST_DELAY="rank=5,comm_size=4,ms=15,after=150" \
  start_run -n 12 --nodes 3 -- "$TRAIN" --grid 3x4 --steps 250
finish_run
expect_eq "exit status (row only)" "$RUN_RC" 0
v=$(verdicts_json)
expect_eq "attributed verdicts" "$(echo "$v" | jq '[.[] | select(.status == "attributed")] | length')" 0
c=$(echo "$v" | jq '[.[] | select(.kind == "straggler" and .evidence.type == "communication")]')
expect_eq "inconclusive communication verdicts" "$(echo "$c" | jq length)" 1
expect_eq "common ranks" "$(echo "$c" | jq -c '.[0].evidence.common_ranks')" "[4,5,6,7]"
pass "communication straggler: rank 5's slow link attributed to n2; a slow row alone is inconclusive"
