#!/bin/sh
# Prolog health gating: a job whose rank 2 receives a corrupted Allreduce
# output -> an sdc verdict naming n3, and the epilog drains n3. An
# administrator who resumes n3 without clearing it gets it refused by
# scout-prolog at the next job (drained again with a scout reason, the job
# does not run there, 'refuse' recorded). `scoutctl node n3` shows the open
# verdict; `scoutctl clear n3 --reason ...` records who cleared it and why,
# resumes n3 in Slurm (scout drained it), and after that the next job runs
# on n3.
. "$top_srcdir/tests/integration/slurm_lib.sh"
start_cluster
# n3's core 0 computes wrong: root's own node check (the epilog re-runs the
# replay recipes on every core) must find it before n3 is drained. Test-only
# hook of --enable-fault-injection builds: a root-owned file beside the site
# ledger, SCOUT_REPLAY_FAULT syntax.
echo "node=n3,core=0,recipe=*,bit=3" > "$CL/node-check-fault"
SCOUT_OUTSIG_EVERY=1 srun --scout=on --mpi=pmix -N3 -n3 "$TRAIN" --steps 1500 --step-ms 10 \
  --fault corrupt:rank=2:step=50 > "$T/run.log" 2>&1 &
RUN_PID=$!
J1=$(current_job)
wait_job_verdict "$J1" sdc 60
wait "$RUN_PID" || fail "the corrupted job failed: $(tail -5 "$T/run.log")"
RUN_PID=
wait_epilog "$J1" n3
v=$("$SCOUTCTL" query "$J1" --json | jq -c 'map(select(.kind == "sdc"))')
expect_eq "sdc hosts" "$(echo "$v" | jq -c '.[0].hosts')" '["n3"]'
expect_eq "sdc status" "$(echo "$v" | jq -r '.[0].status')" attributed
case "$(node_reason n3)" in "scout: sdc rank 2 job $J1"*) ;; *) fail "n3 reason after the epilog: $(node_reason n3)" ;; esac
expect_eq "n3's drain names root's reproduction" \
  "$(sqlite3 "$SITE" "select count(*) from gating where job_id='$J1' and node='n3' and decision='drain' and reason like '%reproduced by root''s node check: replay: core %'")" 1
expect_eq "sdc confirmed by root" "$(sqlite3 "$SITE" "select confirmation from verdicts where job_id='$J1' and kind='sdc'")" confirmed

# The administrator resumes n3 without clearing it: the prolog refuses it.
scontrol update nodename=n3 state=resume
"$SCOUTCTL" node n3 --ledger "$SITE" > "$T/node.txt"
cat "$T/node.txt"
grep -q "node n3: 1 open verdict" "$T/node.txt" || fail "scoutctl node: $(cat "$T/node.txt")"
timeout 60 srun -w n3 -N1 -n1 printenv SLURMD_NODENAME > "$T/refused.log" 2>&1 && rc=0 || rc=$?
echo "srun on the refused node: exit $rc: $(tail -3 "$T/refused.log")"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "the job on n3 was not refused (exit $rc): $(cat "$T/refused.log")"
grep -qx n3 "$T/refused.log" && fail "the job ran on the refused node n3"
case "$(node_state n3)" in drain*) ;; *) fail "n3 not drained by the prolog: $(node_state n3)" ;; esac
case "$(node_reason n3)" in "scout: open sdc verdict"*"job $J1"*) ;; *) fail "n3 reason after the prolog: $(node_reason n3)" ;; esac
expect_eq "refuse decisions" "$(sqlite3 "$SITE" "select count(*) from gating where node='n3' and decision='refuse'")" 1

# Clearing needs a reason; with one, the node is accepted again.
expect_error 2 "reason TEXT is required" "$SCOUTCTL" clear n3 --ledger "$SITE"
expect_error 2 "not a node name" "$SCOUTCTL" clear "n3;x" --reason r --ledger "$SITE"
"$SCOUTCTL" clear n3 --reason "ran the vendor diagnostics: clean" --ledger "$SITE" > "$T/clear.txt" ||
  fail "scoutctl clear failed"
grep -q "node n3: cleared 1 open verdict" "$T/clear.txt" || fail "scoutctl clear said: $(cat "$T/clear.txt")"
expect_eq "open after clear" "$("$SCOUTCTL" node n3 --ledger "$SITE" --json | jq '.open_verdicts | length')" 0
expect_eq "clear row" "$(sqlite3 "$SITE" "select job_id is null, reason like 'ran the vendor diagnostics: clean%' from gating where node='n3' and decision='clear'")" "1|1"
# scout drained n3 (its reason is scout's): the clear resumed it.
grep -q "node n3: resumed in Slurm" "$T/clear.txt" || fail "scoutctl clear did not resume n3: $(cat "$T/clear.txt")"
case "$(node_state n3)" in drain*) fail "n3 still drained after the clear: $(node_state n3)" ;; esac
out=$(timeout 60 srun -w n3 -N1 -n1 sh -c 'echo $SLURMD_NODENAME $SLURM_JOB_ID' 2> "$T/after.err") ||
  fail "the job after the clear failed: $(cat "$T/after.err")"
expect_eq "job after clear ran on" "${out% *}" n3
wait_epilog "${out#* }" n3
# The decision row is written just before the epilog exits: n3 is
# 'completing' until slurmd sees it exit.
n=0; while [ "$(node_state n3)" = completing ] && [ $n -lt 50 ]; do n=$((n + 1)); sleep 0.2; done
expect_eq "n3 state" "$(node_state n3)" idle
pass "slurm prolog: open sdc refuses n3 until scoutctl clear; then it runs jobs again"
