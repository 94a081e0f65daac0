#!/bin/sh
# Which rank is in which call, at which line, and why that is wrong (the
# short run of tests/mpi_bugs/): each buggy program's verdict states every
# group of ranks with its MPI call and the program's line that called it
# (scout-stack reads the DWARF line tables), and the kind of mismatch in
# words, with a strict majority (the odd rank named) and without one (two
# ranks: inconclusive, the facts still stated); `scoutctl query` prints the
# sentence; the correct program stays silent.
# Duration: about 40 s: five small jobs, each waiting for its threshold.
. "$top_srcdir/tests/integration/lib.sh"
BUGS=$B/tests/mpi_bugs
SRC=$top_srcdir/tests/mpi_bugs
# line WORD FILE: the line of FILE marked "expect: WORD"
line() { grep -n "/\* expect: $1 \*/" "$SRC/$2" | cut -d: -f1; }

# bug N FILE KIND STATUS RANKS WORDS : runs FILE on N ranks, waits for its
# verdict, checks kind, status and ranks and that the summary says WORDS
bug() {
  nranks=$1 prog=$2 kind=$3 status=$4 ranks=$5 words=$6
  next_job
  start_run -n "$nranks" --nodes 2 --stall-threshold 2 -- "$BUGS/$prog" 20
  wait_for_verdict "$kind" 30
  v=$(verdicts_json)
  expect_eq "$prog on $nranks: kinds" "$(echo "$v" | jq -c '[.[].kind]')" "[\"$kind\"]"
  expect_eq "$prog on $nranks: status" "$(echo "$v" | jq -r '.[0].status')" "$status"
  expect_eq "$prog on $nranks: ranks" "$(echo "$v" | jq -c '.[0].ranks')" "$ranks"
  SUMMARY=$(echo "$v" | jq -r '.[0].evidence.summary')
  echo "$prog on $nranks ranks: $SUMMARY"
  case "$SUMMARY" in *": $words") ;; *) fail "$prog on $nranks: summary does not end with '$words': $SUMMARY" ;; esac
  GROUPS_JSON=$(echo "$v" | jq -c '.[0].evidence.groups')
  "$SCOUTCTL" query "$JOB" > "$T/query"
  grep -qF "$SUMMARY" "$T/query" || fail "$prog on $nranks: scoutctl query does not print the summary: $(cat "$T/query")"
  stop_run
}

# Two ranks, collectives in a different order: no strict majority, but
# which rank is where is stated, with both lines.
bug 2 coll_order divergence inconclusive "[]" "the ranks call collectives in a different order"
case "$SUMMARY" in
  "rank 0 in MPI_Allreduce (coll_order.c:$(line ALLREDUCE coll_order.c)), rank 1 in MPI_Barrier (coll_order.c:$(line BARRIER coll_order.c)) at collective 21"*) ;;
  *) fail "coll_order on 2: summary does not name both calls and lines: $SUMMARY" ;;
esac
expect_eq "coll_order on 2: group sites" "$(echo "$GROUPS_JSON" | jq -c '[.[] | .site]')" \
  "[\"coll_order.c:$(line ALLREDUCE coll_order.c)\",\"coll_order.c:$(line BARRIER coll_order.c)\"]"

# Three ranks: the odd one is named, and the groups are stated.
bug 3 coll_order divergence attributed "[2]" "the ranks call collectives in a different order"
case "$SUMMARY" in
  "ranks 0-1 in MPI_Allreduce (coll_order.c:$(line ALLREDUCE coll_order.c)), rank 2 in MPI_Barrier (coll_order.c:$(line BARRIER coll_order.c))"*) ;;
  *) fail "coll_order on 3: summary: $SUMMARY" ;;
esac

# The same collective on another communicator.
bug 2 coll_comm divergence inconclusive "[]" "the ranks call barrier on different communicators"
case "$SUMMARY" in
  "rank 0 in MPI_Barrier (coll_comm.c:$(line WORLD coll_comm.c)), rank 1 in MPI_Barrier (coll_comm.c:$(line DUP coll_comm.c))"*) ;;
  *) fail "coll_comm on 2: summary: $SUMMARY" ;;
esac
bug 4 coll_comm divergence attributed "[3]" "the ranks call barrier on different communicators"

# The correct program: silent.
next_job
start_run -n 4 --nodes 2 --stall-threshold 2 -- "$BUGS/coll_ok" 300
finish_run
expect_eq "coll_ok exit" "$RUN_RC" 0
expect_no_verdicts "coll_ok"
assert_no_leftovers
pass "collective mismatches: every group's call and line stated, with and without a majority; the correct program silent"
