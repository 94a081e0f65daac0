#!/bin/sh
# Where every rank is, on every hang: each scoutd takes the stacks of its
# stalled ranks (scout-stack: ptrace through libdwfl), and the hang verdict
# carries the stack-trace classes; `scoutctl stacks JOB` prints the tree of
# a live job; a stopped rank stays stopped after it is traced; tracing a
# healthy job again and again neither kills nor stops it; a process that
# cannot be traced is reported with the reason.
. "$top_srcdir/tests/integration/lib.sh"
STACK=$B/scoutd/scout-stack

# scout-stack itself: a sleeping process, one that is gone, bad usage.
sleep 30 & SL=$!
# Once it sleeps (not while the dynamic loader still maps its libraries).
n=0; until grep -q nanosleep "/proc/$SL/wchan" 2>/dev/null || [ "$(cat "/proc/$SL/syscall" 2>/dev/null | cut -d' ' -f1)" = 230 ]; do
  n=$((n + 1)); [ $n -lt 100 ] || fail "sleep never slept"; sleep 0.05; done
out=$("$STACK" "$SL")
# Each frame is its function, with its call site where the module has line
# tables ("clock_nanosleep (clock_nanosleep.c:71)" with glibc's debug files).
echo "$out" | jq -e '[.frames[] | sub(" \\([^()]*:[0-9]+\\)$"; "")] | index("clock_nanosleep") != null' >/dev/null ||
  fail "scout-stack of sleep: $out"
kill -STOP "$SL"; "$STACK" "$SL" >/dev/null
expect_eq "a stopped process stays stopped after scout-stack" "$(ps -o stat= -p "$SL" | cut -c1)" T
kill "$SL"; kill -CONT "$SL" 2>/dev/null || true
rc=0; out=$("$STACK" 999999999 2>&1) || rc=$?
expect_eq "scout-stack of no process: exit" "$rc" 1
echo "$out" | jq -e '.error | test("no such process|memory map")' >/dev/null || fail "scout-stack of no process: $out"
expect_error 2 "expected a process id" "$STACK" 12abc

# A hang: rank 2 spins before its next collective, the others wait in MPI_Allreduce.
next_job
start_run -n 8 --nodes 4 --stall-threshold 2 -- "$TRAIN" --steps 100000 --fault hang:rank=2:step=25
wait_for_verdict hang 30
v=$(verdicts_json)
echo "hang evidence: $(echo "$v" | jq -r '.[0].evidence.stacks.text')"
expect_eq "hang ranks" "$(echo "$v" | jq -c '.[0].ranks')" "[2]"
expect_eq "the waiting class" "$(echo "$v" | jq -c '.[0].evidence.stacks.classes[0].ranks')" "[0,1,3,4,5,6,7]"
expect_eq "the waiting class is in MPI_Allreduce" \
  "$(echo "$v" | jq -r '.[0].evidence.stacks.classes[0].frames[0]')" MPI_Allreduce
expect_eq "the hung rank's class" "$(echo "$v" | jq -c '.[0].evidence.stacks.classes[1].ranks')" "[2]"
echo "$v" | jq -r '.[0].evidence.stacks.text' | grep -q "^7 ranks in MPI_Allreduce <- .*; rank 2 in " ||
  fail "stack classes text: $(echo "$v" | jq -r '.[0].evidence.stacks.text')"
# Where every rank is, in a sentence: the call, its line, the position.
echo "$v" | jq -r '.[0].evidence.summary' |
  grep -Eq "^ranks 0-1,3-7 in MPI_Allreduce \(mpi_train.cpp:[0-9]+\) at collective [0-9]+, rank 2 outside MPI \(running\) at main$" ||
  fail "hang summary: $(echo "$v" | jq -r '.[0].evidence.summary')"
# The live tree.
"$SCOUTCTL" stacks "$JOB" > "$T/tree" || fail "scoutctl stacks failed"
cat "$T/tree"
# Callers' frames carry their lines (mpi_train has line tables): the
# waiting ranks' main at the line that calls MPI_Allreduce; the spinning
# rank's innermost frame has none (its line would split a loop's ranks).
grep -Eq "^main \(mpi_train.cpp:[0-9]+\)  \[7 ranks: 0-1,3-7\]" "$T/tree" || fail "tree root: $(cat "$T/tree")"
grep -Eq "^main  \[1 rank: 2\]" "$T/tree" || fail "the spinning rank's root (its innermost frame has no line): $(cat "$T/tree")"
grep -q "^ *MPI_Allreduce  \[7 ranks: 0-1,3-7\]" "$T/tree" || fail "tree: $(cat "$T/tree")"
expect_eq "scoutctl stacks --json ranks" "$("$SCOUTCTL" stacks "$JOB" --json | jq '.ranks | length')" 8
stop_run

# A stopped rank: traced while stopped, still stopped after; its stall
# verdict carries the classes.
next_job
start_run -n 4 --nodes 2 --stall-threshold 2 -- "$TRAIN" --steps 100000 --step-ms 5
until [ -n "$(rank_pid 3 2>/dev/null)" ]; do sleep 0.1; done
sleep 2
kill -STOP "$(rank_pid 3)"
wait_for_verdict stall 20
"$SCOUTCTL" stacks "$JOB" > /dev/null || fail "scoutctl stacks failed"
expect_eq "rank 3 still stopped after being traced" "$(ps -o stat= -p "$(rank_pid 3)" | cut -c1)" T
expect_eq "stall ranks" "$(verdicts_json | jq -c '.[0].ranks')" "[3]"
expect_eq "the stall carries every rank's stack" \
  "$(verdicts_json | jq '[.[0].evidence.stacks.classes[].ranks[]] | length')" 4
# Stopped between steps it is outside MPI; stopped inside a call (the signal
# can land in any instant) it keeps that call and its position.
verdicts_json | jq -r '.[0].evidence.summary' |
  grep -Eq ", rank 3 (outside MPI \(stopped\) at |in MPI_[A-Za-z]+ \(mpi_train.cpp:[0-9]+\) at collective [0-9]+, stopped$)" ||
  fail "stall summary: $(verdicts_json | jq -r '.[0].evidence.summary')"
stop_run

# A healthy job traced again and again: it finishes, exit 0, no verdict.
next_job
start_run -n 4 --nodes 2 -- "$TRAIN" --steps 1500 --step-ms 4
until [ -n "$(rank_pid 3 2>/dev/null)" ]; do sleep 0.1; done
n=0
while [ $n -lt 15 ] && kill -0 "$RUN_PID" 2>/dev/null; do
  "$SCOUTCTL" stacks "$JOB" --json > "$T/s.json" 2>/dev/null || true
  n=$((n + 1))
done
[ $n -ge 5 ] || fail "the job ended before it was traced 5 times"
finish_run
expect_eq "healthy traced job exit" "$RUN_RC" 0
expect_eq "healthy traced job verdicts" "$(verdicts_json | jq length)" 0
assert_no_leftovers
pass "stacks: hang and stall verdicts carry stack classes, scoutctl stacks prints the tree, a stopped rank stays stopped, a traced healthy job finishes untouched"
