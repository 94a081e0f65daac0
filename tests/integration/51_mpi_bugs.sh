#!/bin/sh
# Which rank is in which call, at which line, and why that is wrong (the
# short run of tests/mpi_bugs/): each buggy program's verdict states every
# group of ranks with its MPI call and the program's line that called it
# (scout-stack reads the DWARF line tables), and the kind of mismatch in
# words, with a strict majority (the odd rank named) and without one (two
# ranks: inconclusive, the facts still stated); `scoutctl query` prints the
# sentence; point-to-point deadlocks (both sides receiving, both sending
# synchronously, through MPI_Irecv and MPI_Wait) name both calls and lines;
# an MPI call failing under MPI_ERRORS_ARE_FATAL is the program's abort
# naming the call and the error class; the correct programs stay silent.
# Duration: about 180 s: twenty-two small jobs, most waiting for their threshold.
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
  start_run -n "$nranks" --nodes 2 --stall-threshold 2 -- "$BUGS/$prog" ${STEPS:-20}
  wait_for_verdict "$kind" 30
  v=$(verdicts_json)
  expect_eq "$prog on $nranks: kinds" "$(echo "$v" | jq -c '[.[].kind]')" "[\"$kind\"]"
  expect_eq "$prog on $nranks: status" "$(echo "$v" | jq -r '.[0].status')" "$status"
  expect_eq "$prog on $nranks: ranks" "$(echo "$v" | jq -c '.[0].ranks')" "$ranks"
  SUMMARY=$(echo "$v" | jq -r '.[0].evidence.summary')
  echo "$prog on $nranks ranks: $SUMMARY"
  [ -z "$words" ] || case "$SUMMARY" in *": $words") ;; *) fail "$prog on $nranks: summary does not end with '$words': $SUMMARY" ;; esac
  GROUPS_JSON=$(echo "$v" | jq -c '.[0].evidence.groups')
  "$SCOUTCTL" query "$JOB" > "$T/query"
  grep -qF "$SUMMARY" "$T/query" || fail "$prog on $nranks: scoutctl query does not print the summary: $(cat "$T/query")"
  stop_run
}

# Two ranks, collectives in a different order: no strict majority, but
# which rank is where is stated, with both lines.
bug 2 coll_order divergence inconclusive "[]" "the ranks call collectives in a different order"
case "$SUMMARY" in
  "rank 0 in MPI_Allreduce (coll_order.c:$(line ALLREDUCE coll_order.c)), rank 1 in MPI_Barrier (coll_order.c:$(line BARRIER coll_order.c)) at collective 21 of MPI_COMM_WORLD: "*) ;;
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

# The same collective with another root: each group says its root; with
# three ranks the one between went on past the position (it received from
# rank 0) and still votes with what it called there: the last rank named.
bug 2 coll_root divergence inconclusive "[]" "the ranks call bcast with different roots"
case "$SUMMARY" in
  "rank 0 in MPI_Bcast with root 0 (coll_root.c:$(line BCAST coll_root.c)), rank 1 in MPI_Bcast with root 1 (coll_root.c:$(line BCAST coll_root.c)) at collective 21"*) ;;
  *) fail "coll_root on 2: summary: $SUMMARY" ;;
esac
expect_eq "coll_root on 2: the roots in the groups" "$(echo "$GROUPS_JSON" | jq -c '[.[] | .args.root]')" "[0,1]"
bug 3 coll_root divergence attributed "[2]" ""
case "$SUMMARY" in
  *"rank 2 in MPI_Bcast with root 2 (coll_root.c:$(line BCAST coll_root.c))"*": the ranks call bcast with different roots; rank 1 went on past it") ;;
  *) fail "coll_root on 3: summary: $SUMMARY" ;;
esac

# A correct program whose ranks are spread over positions by rooted
# collectives (a Gatherv's root still in it, its senders in the Allgatherv
# after it) while the last rank computes for 4 s: that rank is named.
next_job
start_run -n 4 --nodes 2 --stall-threshold 2 -- "$BUGS/coll_args_ok" 300 4
wait_for_verdict hang 30
expect_eq "slow rank among rooted collectives: ranks" "$(verdicts_json | jq -c '[.[] | select(.kind == "hang")][0].ranks')" "[3]"
finish_run
expect_eq "coll_args_ok with a slow rank: exit" "$RUN_RC" 0
expect_eq "coll_args_ok with a slow rank: only the hang" "$(verdicts_json | jq -c '[.[].kind]')" '["hang"]'

# Point-to-point deadlocks, blocking and through a request: both calls
# with their lines and peers.
bug 2 p2p_recv_recv deadlock attributed "[0,1]" "each rank waits to receive from the next before it sends (both sides receiving)"
case "$SUMMARY" in
  "rank 0 in MPI_Recv (p2p_recv_recv.c:$(line RECV0 p2p_recv_recv.c)) for rank 1, rank 1 in MPI_Recv (p2p_recv_recv.c:$(line RECV1 p2p_recv_recv.c)) for rank 0:"*) ;;
  *) fail "p2p_recv_recv on 2: summary: $SUMMARY" ;;
esac
# With bystanders: they wait in the barrier after it, and are said to.
bug 4 p2p_recv_recv deadlock attributed "[0,1]" "each rank waits to receive from the next before it sends (both sides receiving)"
case "$SUMMARY" in
  "ranks 2-3 in MPI_Barrier (p2p_recv_recv.c:"*", rank 0 in MPI_Recv (p2p_recv_recv.c:$(line RECV0 p2p_recv_recv.c)) for rank 1,"*) ;;
  *) fail "p2p_recv_recv on 4: summary: $SUMMARY" ;;
esac
bug 2 p2p_ssend_ssend deadlock attributed "[0,1]" \
  "each rank sends to the next before it receives, and no send completes before its receive is posted (both sides sending: synchronous, or too large to buffer)"
case "$SUMMARY" in
  "rank 0 in MPI_Ssend (p2p_ssend_ssend.c:$(line SEND0 p2p_ssend_ssend.c)) for rank 1, rank 1 in MPI_Ssend (p2p_ssend_ssend.c:$(line SEND1 p2p_ssend_ssend.c)) for rank 0:"*) ;;
  *) fail "p2p_ssend_ssend on 2: summary: $SUMMARY" ;;
esac
# Through MPI_Irecv and MPI_Wait: the probe records which way each awaited
# request goes, so a cycle of waits for receives is a deadlock with the whole
# job in it too, and a wait for a receive whose tag no send matches is said
# with both tags.
bug 2 p2p_irecv_wait deadlock attributed "[0,1]" "each rank waits to receive from the next before it sends (both sides receiving)"
case "$SUMMARY" in
  "rank 0 in MPI_Wait (p2p_irecv_wait.c:$(line WAIT0 p2p_irecv_wait.c)) for rank 1, rank 1 in MPI_Wait (p2p_irecv_wait.c:$(line WAIT1 p2p_irecv_wait.c)) for rank 0:"*) ;;
  *) fail "p2p_irecv_wait on 2: summary: $SUMMARY" ;;
esac
expect_eq "p2p_irecv_wait on 2: directions" "$(echo "$GROUPS_JSON" | jq -c '[.[] | .dirs]')" '["r","r"]'
bug 2 p2p_irecv_tag deadlock attributed "[0,1]" "no receive matches the send (tag 1 sent, tag 2 awaited)"
case "$SUMMARY" in
  "rank 0 in MPI_Ssend (p2p_irecv_tag.c:$(line SSEND p2p_irecv_tag.c)) for rank 1 with tag 1, rank 1 in MPI_Wait (p2p_irecv_tag.c:$(line WAIT p2p_irecv_tag.c)) for rank 0 with tag 2:"*) ;;
  *) fail "p2p_irecv_tag on 2: summary: $SUMMARY" ;;
esac
# A halo of MPI_Irecv/MPI_Isend and MPI_Waitall whose last rank tags its
# left-going message wrong, on two ranks: the probe waits for a few
# requests with MPI_Waitsome, so the record keeps only those still pending
# (rank 0's receive of tag 2, rank 1's send of tag 1; the other two
# matched): a deadlock of both, the tags and the line stated.
bug 2 p2p_halo_tag deadlock attributed "[0,1]" "no receive matches the send (tag 1 sent, tag 2 awaited)"
case "$SUMMARY" in
  "rank 0 in MPI_Waitall (p2p_halo_tag.c:$(line WAITALL p2p_halo_tag.c)) for rank 1 with tag 2, rank 1 in MPI_Waitall (p2p_halo_tag.c:$(line WAITALL p2p_halo_tag.c)) for rank 0 with tag 1:"*) ;;
  *) fail "p2p_halo_tag on 2: summary: $SUMMARY" ;;
esac
# MPI_Waitall waited for that way still returns what MPI_Waitall returns:
# statuses in request order (any-source receives, a null request's empty
# status, an inactive persistent request's), checked by the program itself.
next_job
start_run -n 3 --nodes 2 --stall-threshold 2 -- "$BUGS/ok_waitall_status"
finish_run
expect_eq "ok_waitall_status exit" "$RUN_RC" 0
grep -q "^ok_waitall_status: all statuses as MPI_Waitall's" "$T/run.log" || fail "ok_waitall_status: $(tail -5 "$T/run.log")"
expect_no_verdicts ok_waitall_status

# A blocking send that no posted receive matches (another tag, another
# communicator): both named, with the tags.
bug 3 p2p_tag deadlock attributed "[0,1]" "no receive matches the send (tag 1 sent, tag 2 awaited)"
case "$SUMMARY" in
  "rank 0 in MPI_Send (p2p_tag.c:$(line SEND p2p_tag.c)) for rank 1 with tag 1, rank 1 in MPI_Recv (p2p_tag.c:$(line RECV p2p_tag.c)) for rank 0 with tag 2, rank 2 in MPI_Barrier"*) ;;
  *) fail "p2p_tag on 3: summary: $SUMMARY" ;;
esac
bug 2 p2p_comm deadlock attributed "[0,1]" "no receive matches the send (sent on another communicator than the receive waits on)"

# A receive whose only sender has finalized: one rank left, no majority to
# ask, and still named.
STEPS=500; bug 2 p2p_recv_finalized hang attributed "[0]" "the ranks it waits for called MPI_Finalize without sending what it waits for"
case "$SUMMARY" in
  "rank 0 in MPI_Recv (p2p_recv_finalized.c:$(line RECV p2p_recv_finalized.c)) for rank 1, rank 1 outside MPI (finalized):"*) ;;
  *) fail "p2p_recv_finalized on 2: summary: $SUMMARY" ;;
esac
STEPS=20
# A collective one rank left by finalizing (it skipped the last one): the
# rank that left is named at two ranks too, even when it finalized before
# its observer attached; a rank blocked sending to itself: a deadlock of one.
bug 2 coll_finalized hang attributed "[1]" "ranks called MPI_Finalize while the others wait in a collective on a communicator they belong to"
case "$SUMMARY" in
  "rank 0 in MPI_Allreduce (coll_finalized.c:$(line ALLREDUCE coll_finalized.c)) at collective 21, rank 1 outside MPI (finalized):"*) ;;
  *) fail "coll_finalized on 2: summary: $SUMMARY" ;;
esac
# A rank that exits without MPI_Finalize while the other waits: abort (the
# program's own end, no drain), at two ranks.
bug 2 exit_early abort attributed "[1]" ""
expect_eq "exit_early on 2: summary" "$SUMMARY" \
  "rank 1 exited (status 0) without calling MPI_Finalize while rank 0 in MPI_Allreduce waited"
bug 3 p2p_ssend_self deadlock attributed "[0]" ""
case "$SUMMARY" in
  *"rank 0 in MPI_Ssend (p2p_ssend_self.c:$(line SSEND p2p_ssend_self.c)) for rank 0"*"the rank sends to itself"*) ;;
  *) fail "p2p_ssend_self on 3: summary: $SUMMARY" ;;
esac

# A stripped copy of a program: the best facts left (the caller's module
# and offset), and the groups say what is missing.
cp "$BUGS/coll_order" "$T/coll_order" && strip "$T/coll_order"
BUGS_SAVED=$BUGS; BUGS=$T
bug 3 coll_order divergence attributed "[2]" "the ranks call collectives in a different order"
BUGS=$BUGS_SAVED
case "$SUMMARY" in
  "ranks 0-1 in MPI_Allreduce (from coll_order+0x"*"), rank 2 in MPI_Barrier (from coll_order+0x"*) ;;
  *) fail "stripped coll_order on 3: summary: $SUMMARY" ;;
esac
expect_eq "stripped coll_order: what is missing" "$(echo "$GROUPS_JSON" | jq -r '.[0].site_missing')" \
  "no symbols or line tables for the caller (a stripped binary): its module and offset"

# An MPI call failing under MPI_ERRORS_ARE_FATAL: the program's own end
# (abort, never a drain), not a crash. (Open MPI 4.1's own message is not
# asserted: its mpirun loses it now and then while the job is torn down,
# "ORTE_ERROR_LOG: Out of resource in show_help.c", with or without scout.)
bug 2 mpi_error_rank abort attributed "[1]" "MPI_Send failed with MPI_ERR_RANK (MPI_ERRORS_ARE_FATAL)"
expect_eq "mpi_error_rank: the error class" "$(verdicts_json | jq -r '.[0].evidence.culprits[0].error_class')" MPI_ERR_RANK
# The same after the program set MPI_ERRORS_RETURN and put MPI_ERRORS_ARE_FATAL back.
STEPS="20 restore"; bug 3 mpi_error_rank abort attributed "[1]" "MPI_Send failed with MPI_ERR_RANK (MPI_ERRORS_ARE_FATAL)"; STEPS=20

# The correct programs: silent (ok_errors_return handles an MPI error itself).
for ok in coll_ok coll_args_ok p2p_ok ok_errors_return; do
  next_job
  start_run -n 4 --nodes 2 --stall-threshold 2 -- "$BUGS/$ok"
  finish_run
  expect_eq "$ok exit" "$RUN_RC" 0
  expect_no_verdicts "$ok"
done
assert_no_leftovers
pass "collective mismatches and point-to-point deadlocks: every group's call and line stated, with and without a majority; the correct programs silent"
