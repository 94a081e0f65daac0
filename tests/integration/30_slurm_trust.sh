#!/bin/sh
# Trust but verify, with the site's default gating (blame_jobs=3,
# blame_users=2): what a user can do to the test cluster, and what an
# operator sees.
#  1. A job that crashes its own rank: the verdict names the node, root's
#     node check passes, the node is only suspect (sinfo: idle; the decision
#     row and `scoutctl node` say what root checked). A second crash by the
#     same user: still suspect.
#  2. A forged row with a far-future time in the user's spool: imported as
#     the user's word (suspect at most), closed for good by `scoutctl clear`.
#  3. Names of the next job planted by another user (uid 65534) in the
#     node's runtime directory, spool and /dev/shm: taken back by root before
#     the job starts; the job is observed and its verdict recorded.
#  4. A socket planted by another user: root's scoutctl refuses to talk.
#  5. The epilog without SLURM_JOB_UID: nothing imported, an error row.
. "$top_srcdir/tests/integration/slurm_lib.sh"
start_cluster blame_jobs=3 blame_users=2 dstate_wait=0.5
NOBODY=65534

# --- 1. self-crash, twice --------------------------------------------------
for round in 1 2; do
  srun --scout=on --mpi=pmix -N3 -n3 "$TRAIN" --steps 400 --step-ms 10 --fault crash:rank=1:step=30 \
    > "$T/crash$round.log" 2>&1 &
  RUN_PID=$!
  J=$(current_job)
  wait_job_verdict "$J" crash 60 n1
  # The surviving ranks wait for the dead one forever (shared memory): the
  # user cancels the job, as one does.
  scancel "$J"
  wait "$RUN_PID" 2>/dev/null || true
  RUN_PID=
  for n in n1 n2 n3; do wait_epilog "$J" "$n"; done
  expect_eq "round $round: n2 state" "$(node_state n2)" idle
  expect_eq "round $round: n2 decision" "$(sqlite3 "$SITE" "select decision from gating where job_id='$J' and node='n2' and decision != 'error'")" suspect
  ev=$(sqlite3 "$SITE" "select evidence from gating where job_id='$J' and node='n2' and decision='suspect'")
  expect_eq "round $round: root's replay check" "$(echo "$ev" | jq -r '.node_check[] | select(.check == "replay") | .result')" pass
  expect_eq "round $round: blame jobs" "$(echo "$ev" | jq '.blame.jobs')" "$round"
  expect_eq "round $round: blame users" "$(echo "$ev" | jq '.blame.users')" 1
done
"$SCOUTCTL" node n2 --ledger "$SITE" > "$T/node.txt"
grep -q "suspect" "$T/node.txt" || fail "scoutctl node n2 does not show 'suspect': $(cat "$T/node.txt")"
grep -q "root checked: replay pass, d_state pass" "$T/node.txt" || fail "scoutctl node n2 does not say what root checked: $(cat "$T/node.txt")"
grep -q "drain needs 3 of 2" "$T/node.txt" || fail "scoutctl node n2 does not give the blame threshold: $(cat "$T/node.txt")"

# --- 2. a forged row, far in the future --------------------------------------
srun --scout=on --mpi=pmix -N3 -n3 "$TRAIN" --steps 600 --step-ms 10 > "$T/forge.log" 2>&1 &
RUN_PID=$!
J=$(current_job)
n=0; until on n1 test -s "$SPOOL/$J/$J.db"; do n=$((n + 1)); [ $n -lt 100 ] || fail "no spool for $J"; sleep 0.2; done
on n1 sqlite3 -cmd ".timeout 10000" "$SPOOL/$J/$J.db" "insert into verdicts(job_id,step,kind,status,ranks,hosts,evidence,detected_at,vkey) values('$J','0','stall','attributed','[0]','[\"n1\"]','{}','2999-01-01T00:00:00Z','$J.0.o0.1.99')" ||
  fail "could not forge a row (the spool was not writable by the job's user?)"
wait "$RUN_PID" || fail "the forging job failed: $(tail -5 "$T/forge.log")"
RUN_PID=
for n in n1 n2 n3; do wait_epilog "$J" "$n"; done
expect_eq "n1 after a forged stall" "$(node_state n1)" idle
expect_eq "forged row: n1 decision" "$(sqlite3 "$SITE" "select decision from gating where job_id='$J' and node='n1' and decision != 'error'")" suspect
"$SCOUTCTL" clear n1 --reason "checked: the verdict was forged" --ledger "$SITE" >/dev/null || fail "clear failed"
expect_eq "open verdicts on n1 after the clear" "$("$SCOUTCTL" node n1 --ledger "$SITE" --json | jq '.open_verdicts | length')" 0

# --- 3. names of the next job, planted by another user ---------------------------
# Slurm numbers jobs one by one: the job after this one is predictable.
NEXT=$(( $(srun -N1 -n1 -w n1 printenv SLURM_JOB_ID) + 1 ))
on n1 sh -c "setpriv --reuid $NOBODY --regid $NOBODY --clear-groups sh -c 'mkdir -m 0777 $RUNDIR/$NEXT; mkdir -m 0777 $SPOOL/$NEXT; echo planted > $SPOOL/$NEXT/$NEXT.db; chmod 666 $SPOOL/$NEXT/$NEXT.db; head -c 20096 /dev/zero > /dev/shm/scout.$NEXT.0.0; chmod 666 /dev/shm/scout.$NEXT.0.0'" ||
  fail "could not plant names as uid $NOBODY"
srun --scout=on --mpi=pmix -N3 -n6 "$TRAIN" --steps 150 --fault stop:rank=0:step=30 > "$T/planted.log" 2>&1 &
RUN_PID=$!
J=$(current_job)
expect_eq "predicted job id" "$J" "$NEXT"
wait_job_verdict "$J" stall 40 n1
pid=$(query_on n1 "$J" --json | jq '.[0].evidence.culprits[0].pid')
kill -CONT "$pid"
wait "$RUN_PID" || fail "the job with planted names failed: $(tail -5 "$T/planted.log")"
RUN_PID=
for n in n1 n2 n3; do wait_epilog "$J" "$n"; done
expect_eq "stall imported from n1's spool" "$(sqlite3 "$SITE" "select count(*) from verdicts where job_id='$J' and kind='stall'")" 1
grep -q "scout: $RUNDIR/$NEXT was created by uid $NOBODY before this job" "$CL"/log/slurmd*.log ||
  fail "slurmd's log does not say the runtime directory was taken back: $(grep -h 'scout:' "$CL"/log/slurmd*.log | tail -5)"
grep -q "scout: $SPOOL/$NEXT was created by uid $NOBODY before this job" "$CL"/log/slurmd*.log ||
  fail "slurmd's log does not say the planted spool was taken back"

# --- 4. a socket planted by another user ------------------------------------------
FAKE=$(mktemp -d /tmp/scout-fake.XXXXXX) && chmod 755 "$FAKE" && mkdir "$FAKE/4242" && chmod 1777 "$FAKE/4242"
setpriv --reuid $NOBODY --regid $NOBODY --clear-groups \
  socat UNIX-LISTEN:"$FAKE/4242/scoutd.n1.sock",fork SYSTEM:'echo SCOUTD 1 job 4242 node n1; echo OK' &
SOCAT=$!  # setpriv execs socat: this is socat's pid
n=0; until [ -S "$FAKE/4242/scoutd.n1.sock" ]; do n=$((n + 1)); [ $n -lt 50 ] || fail "socat did not listen"; sleep 0.1; done
rc=0; "$SCOUTCTL" status 4242 --runtime-dir "$FAKE" > "$T/fake.out" 2> "$T/fake.err" || rc=$?
kill "$SOCAT" 2>/dev/null || true
wait "$SOCAT" 2>/dev/null || true
rm -rf "$FAKE"
expect_eq "scoutctl status on a planted socket" "$rc" 5
grep -q "answered by uid $NOBODY, which is neither root, you, nor the job's user; refused" "$T/fake.err" ||
  fail "scoutctl did not refuse the planted socket: $(cat "$T/fake.err")"

# --- 5. the epilog without its environment ---------------------------------------------
rc=0; env -i PATH="$PATH" SLURM_CONF="$SLURM_CONF" "$B/spank/scout-epilog" --plugstack "$CL/plugstack.conf" \
  --job "$J" --node n1 > "$T/e.out" 2>&1 || rc=$?
expect_eq "epilog without SLURM_JOB_UID: exit" "$rc" 0
expect_eq "its error row" "$(sqlite3 "$SITE" "select count(*) from gating where job_id='$J' and node='n1' and decision='error' and reason like 'SLURM_JOB_UID is not set%'")" 1
pass "trust: self-crashes make a node suspect, not drained; forged rows and planted names change nothing root decides"
