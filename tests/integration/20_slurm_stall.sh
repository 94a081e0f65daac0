#!/bin/sh
# srun --scout=on on a three-node Slurm cluster with node-local disks: rank 4
# stops itself; one stall verdict names rank 4 on node n3 (decided by n1's
# scoutd); every node's own spool holds it while the job runs (n2 and n3 as
# replicas), so n3's epilog drains n3 and keeps n1 and n2; nothing a node
# writes is visible from another node or the login node; the site ledger
# holds the verdict once (imported from three spools) and the decisions.
. "$top_srcdir/tests/integration/slurm_lib.sh"
start_cluster
# Node-local disks: what one node writes in its spool, the others and the
# login node do not see.
on n1 sh -c "echo n1 > $SPOOL/privacy-check"
expect_eq "n1's own file" "$(on n1 cat "$SPOOL/privacy-check")" n1
for n in n2 n3; do on "$n" test ! -e "$SPOOL/privacy-check" || fail "$n sees n1's spool"; done
[ ! -e "$CL/node-n1$SPOOL/privacy-check" ] && fail "the node's spool is not where the cluster keeps it"
grep -qx n1 "$SPOOL/privacy-check" 2>/dev/null && fail "the login node sees n1's spool"
on n1 rm -f "$SPOOL/privacy-check"
srun --scout=on --mpi=pmix -N3 -n6 "$TRAIN" --steps 150 --fault stop:rank=4:step=30 > "$T/run.log" 2>&1 &
RUN_PID=$!
J=$(current_job)
wait_job_verdict "$J" stall 30 n1
# Every node's spool has the verdict, not only the deciding observer's.
for n in n2 n3; do wait_job_verdict "$J" stall 10 "$n"; done
v=$(query_on n3 "$J" --json)
expect_eq "verdicts" "$(echo "$v" | jq length)" 1
expect_eq "ranks" "$(echo "$v" | jq -c '.[0].ranks')" "[4]"
expect_eq "hosts" "$(echo "$v" | jq -c '.[0].hosts')" '["n3"]'
expect_eq "state" "$(echo "$v" | jq -r '.[0].evidence.culprits[0].state')" T
# Each node's scoutd (the job's user's) traced its ranks with the installed
# scout-stack: all six are in the stack classes, none untraced.
expect_eq "stack classes cover every rank" "$(echo "$v" | jq -c '[.[0].evidence.stacks.classes[].ranks[]] | sort')" "[0,1,2,3,4,5]"
expect_eq "untraced ranks" "$(echo "$v" | jq -c '.[0].evidence.stacks.untraced')" "[]"
pid=$(echo "$v" | jq '.[0].evidence.culprits[0].pid')
tr '\0' '\n' < "/proc/$pid/environ" | grep -qx "SLURMD_NODENAME=n3" || fail "culprit pid $pid is not on n3"
# Her job, as at any site: the ranks and every scoutd run as the job's user.
expect_eq "the culprit's user" "$(stat -c %U "/proc/$pid")" "$JOB_USER"
# The site's Open MPI network settings reach the scoutds' own MPI.
tr '\0' '\n' < "/proc/$(node_scoutd_pid "$J" n2)/environ" | grep -qx "OMPI_MCA_btl_tcp_if_include=lo" ||
  fail "the scoutd on n2 lost OMPI_MCA_btl_tcp_if_include"
expect_eq "the scoutds' users" "$(for n in n1 n2 n3; do stat -c %U "/proc/$(node_scoutd_pid "$J" "$n")"; done | sort -u)" "$JOB_USER"
on n3 "$SCOUTCTL" status "$J" | grep -E "^ +4 +$pid .*stopped \(T\)" >/dev/null || fail "status: $(on n3 "$SCOUTCTL" status "$J" 2>&1)"
expect_eq "verdict rows, n1 n2 n3" "$(for n in n1 n2 n3; do on "$n" sqlite3 -readonly "$SPOOL/$J/$J.db" "select count(*) from verdicts where kind='stall'"; done | tr '\n' ' ')" "1 1 1 "
# A user can write their own spool ledger: a forged verdict naming a node
# outside the allocation must not reach the site ledger.
on n1 sqlite3 "$SPOOL/$J/$J.db" "insert into verdicts(job_id,step,kind,status,ranks,hosts,evidence,detected_at) values('$J','0','crash','attributed','[0]','[\"n9\"]','{}','2026-01-01T00:00:00Z')"
kill -CONT "$pid"
rc=0; wait "$RUN_PID" || rc=$?
[ "$rc" = 0 ] || fail "the job failed after SIGCONT (srun exit status $rc): $(grep -v '^step ' "$T/run.log" | tail -8)"
RUN_PID=
grep -q "done: 150 steps on 6 ranks" "$T/run.log" || fail "training did not finish"
# companion_wait with node-private /run/scout: every scoutd said it was up.
grep -q "did not come up" "$T/run.log" && fail "companion_wait did not see the scoutds come up: $(grep scout: "$T/run.log")"
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
expect_eq "imported stall" "$(sqlite3 "$SITE" "select kind||' '||status||' '||ranks||' '||(origin like 'spool:n_:$SPOOL/$J/$J.db') from verdicts where job_id='$J' and kind='stall'")" "stall attributed [4] 1"
expect_eq "rows not from a spool" "$(sqlite3 "$SITE" "select count(*) from verdicts where job_id='$J' and origin not like 'spool:n_:$SPOOL/$J/$J.db'")" 0
expect_eq "other kinds" "$(sqlite3 "$SITE" "select count(*) from verdicts where job_id='$J' and kind not in ('stall','observer_lost')")" 0
expect_eq "forged verdict imported" "$(sqlite3 "$SITE" "select count(*) from verdicts where hosts like '%n9%'")" 0
sqlite3 "$SITE" "select reason from gating where job_id='$J' and decision='error'" | grep -q "outside the job's allocation" ||
  fail "refused import not recorded: $(sqlite3 "$SITE" "select * from gating where job_id='$J'")"
# After the job the site ledger answers (no spool needed).
expect_eq "site query" "$(SCOUT_SPOOL= "$SCOUTCTL" query "$J" --json | jq -c '.[0].ranks')" "[4]"
expect_eq "site rows of the stall" "$(sqlite3 "$SITE" "select count(*) from verdicts where job_id='$J' and kind='stall'")" 1
pass "slurm stall: rank 4 on n3, n3 drained, n1/n2 in service"
