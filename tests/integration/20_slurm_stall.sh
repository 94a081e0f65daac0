#!/bin/sh
# srun --scout=on on a real three-node Slurm cluster: rank 4 stops itself;
# one stall verdict names rank 4 on node n3, scoutctl query shows it from
# outside the job while it runs and after it; the epilog drains n3 with a
# scout reason and keeps n1 and n2; the site ledger holds the imported
# verdict with its origin and the gating decisions.
. "$top_srcdir/tests/integration/slurm_lib.sh"
start_cluster
srun --scout=on --mpi=pmix -N3 -n6 "$TRAIN" --steps 150 --fault stop:rank=4:step=30 > "$T/run.log" 2>&1 &
RUN_PID=$!
J=$(current_job)
wait_job_verdict "$J" stall 30
v=$("$SCOUTCTL" query "$J" --json)
expect_eq "verdicts" "$(echo "$v" | jq length)" 1
expect_eq "ranks" "$(echo "$v" | jq -c '.[0].ranks')" "[4]"
expect_eq "hosts" "$(echo "$v" | jq -c '.[0].hosts')" '["n3"]'
expect_eq "state" "$(echo "$v" | jq -r '.[0].evidence.culprits[0].state')" T
pid=$(echo "$v" | jq '.[0].evidence.culprits[0].pid')
tr '\0' '\n' < "/proc/$pid/environ" | grep -qx "SLURMD_NODENAME=n3" || fail "culprit pid $pid is not on n3"
"$SCOUTCTL" status "$J" | grep -E "^ +4 +$pid .*stopped \(T\)" >/dev/null || fail "status: $("$SCOUTCTL" status "$J" 2>&1)"
# A user can write their own spool ledger: a forged verdict naming a node
# outside the allocation must not reach the site ledger.
sqlite3 "$SPOOL/$J.db" "insert into verdicts(job_id,step,kind,status,ranks,hosts,evidence,detected_at) values('$J','0','crash','attributed','[0]','[\"n9\"]','{}','2026-01-01T00:00:00Z')"
kill -CONT "$pid"
wait "$RUN_PID" || fail "the job failed after SIGCONT: $(tail -5 "$T/run.log")"
RUN_PID=
grep -q "done: 150 steps on 6 ranks" "$T/run.log" || fail "training did not finish"
for n in n1 n2 n3; do wait_epilog "$J" "$n"; done
expect_eq "n3 state" "$(node_state n3)" drained
expect_eq "n3 reason" "$(node_reason n3)" "scout: stall rank 4 job $J"
expect_eq "n1 state" "$(node_state n1)" idle
expect_eq "n2 state" "$(node_state n2)" idle
expect_eq "decisions" "$(sqlite3 "$SITE" "select node||':'||decision from gating where job_id='$J' and decision != 'error' order by node" | tr '\n' ' ')" "n1:keep n2:keep n3:drain "
# Every row of the job in the site ledger came from its spool ledger; the
# stall is among them. (A loaded CI host may add an observer_lost row when
# a scoutd misses a round deadline; it is logged, and it is also imported.)
sqlite3 "$SITE" "select id,kind,status,ranks,hosts,origin from verdicts where job_id='$J'" >&2
expect_eq "imported stall" "$(sqlite3 "$SITE" "select kind||' '||status||' '||ranks||' '||origin from verdicts where job_id='$J' and kind='stall'")" "stall attributed [4] spool:$SPOOL/$J.db"
expect_eq "rows not from the spool" "$(sqlite3 "$SITE" "select count(*) from verdicts where job_id='$J' and origin is not 'spool:$SPOOL/$J.db'")" 0
expect_eq "other kinds" "$(sqlite3 "$SITE" "select count(*) from verdicts where job_id='$J' and kind not in ('stall','observer_lost')")" 0
expect_eq "forged verdict imported" "$(sqlite3 "$SITE" "select count(*) from verdicts where hosts like '%n9%'")" 0
sqlite3 "$SITE" "select reason from gating where job_id='$J' and decision='error'" | grep -q "outside the job's allocation" ||
  fail "refused import not recorded: $(sqlite3 "$SITE" "select * from gating where job_id='$J'")"
# After the job the site ledger answers (no spool needed).
expect_eq "site query" "$(SCOUT_SPOOL= "$SCOUTCTL" query "$J" --json | jq -c '.[0].ranks')" "[4]"
pass "slurm stall: rank 4 on n3, n3 drained, n1/n2 in service"
