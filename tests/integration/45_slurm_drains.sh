#!/bin/sh
# Drains that respect the site's other tools (NHC's node-mark-offline and
# node-mark-online convention: a node's reason says who drained it).
# 1. NHC drains n3 while a job runs whose rank 4 (on n3) stalls: n3's epilog
#    decides to drain it, records that decision, and leaves NHC's reason in
#    place; `scoutctl nodes` shows NHC's reason and who set it; `scoutctl
#    clear n3` closes the verdict but does not resume NHC's drain.
# 2. NHC resumes n3; the same fault again: scout drains n3 with its own
#    reason ("scout: ..."), which `scoutctl nodes` shows as scout's.
# 3. An administrator asks for a reboot of n3: `scoutctl clear` leaves the
#    node to the reboot (Slurm keeps scout's reason through it).
# (Resuming scout's own drain on clear: 26_slurm_prolog.sh.)
SLURM_CONF_EXTRA="RebootProgram=/bin/true"  # scontrol reboot; the node never really reboots
. "$top_srcdir/tests/integration/slurm_lib.sh"
start_cluster
NHC="NHC: check_hw_mem: 2 DIMMs missing | slot A1"

# stall_job : a job whose rank 4 (on n3) stops; NHC_FIRST=yes drains n3 as
# NHC would while it runs. Sets J; returns once n3's epilog decided.
stall_job() {
  srun --scout=on --mpi=pmix -N3 -n6 "$TRAIN" --steps 150 --fault stop:rank=4:step=30 > "$T/run.log" 2>&1 &
  RUN_PID=$!
  J=$(current_job)
  # Read on n3: its spool holds the verdict a round or two after n1's does
  # (read at once, it had none under load: no pid, and the test failed).
  wait_job_verdict "$J" stall 30 n1
  wait_job_verdict "$J" stall 10 n3
  [ "${NHC_FIRST:-no}" = yes ] && scontrol update nodename=n3 state=drain reason="$NHC"
  pid=$(query_on n3 "$J" --json | jq '[.[] | select(.kind == "stall")][0].evidence.culprits[0].pid')
  case "$pid" in ''|*[!0-9]*) fail "no culprit pid in n3's stall verdict: $(query_on n3 "$J" --json 2>&1)" ;; esac
  kill -CONT "$pid" || fail "SIGCONT to rank 4 (pid $pid) failed"
  wait "$RUN_PID" || fail "the job failed after SIGCONT: $(tail -5 "$T/run.log")"
  RUN_PID=
  wait_epilog "$J" n3
}

NHC_FIRST=yes stall_job
J1=$J
expect_eq "n3 reason (NHC's, kept)" "$(node_reason n3)" "$NHC"
expect_eq "n3 state" "$(node_state n3)" drained
expect_eq "n3 drain decision recorded, not applied" \
  "$(sqlite3 "$SITE" "select count(*) from gating where job_id='$J1' and node='n3' and decision='drain' and reason like 'scout: stall rank 4 job $J1%left as it is%another tool''s reason ''NHC: check_hw_mem: 2 DIMMs missing | slot A1'' (set by root%'")" 1
expect_eq "errors recorded for n3" "$(sqlite3 "$SITE" "select count(*) from gating where job_id='$J1' and node='n3' and decision='error'")" 0
# The administrators' view: the reason in force and who set it.
n3=$("$SCOUTCTL" nodes --ledger "$SITE" --json | jq -c '.[] | select(.node == "n3")')
expect_eq "nodes: n3 reason" "$(echo "$n3" | jq -r .slurm_reason)" "$NHC"
expect_eq "nodes: n3 reason set by" "$(echo "$n3" | jq -r .slurm_reason_by)" root
expect_eq "nodes: n3 drained by scout" "$(echo "$n3" | jq -r .drained_by_scout)" false
expect_eq "nodes: n3 state" "$(echo "$n3" | jq -r .slurm_state)" drained
"$SCOUTCTL" nodes --ledger "$SITE" | grep -E "^n3 .* drained +NHC: check_hw_mem: 2 DIMMs missing \| slot A1 \(root\)$" >/dev/null ||
  fail "scoutctl nodes: $("$SCOUTCTL" nodes --ledger "$SITE" 2>&1)"
# A clear closes scout's verdict but never resumes NHC's drain.
"$SCOUTCTL" clear n3 --reason "DIMMs reseated" --ledger "$SITE" > "$T/clear1.txt" || fail "clear: $(cat "$T/clear1.txt")"
grep -q "node n3: Slurm state left as it is: drained with another tool's reason 'NHC: check_hw_mem" "$T/clear1.txt" ||
  fail "clear of NHC's drain said: $(cat "$T/clear1.txt")"
expect_eq "n3 reason after the clear" "$(node_reason n3)" "$NHC"
expect_eq "n3 state after the clear" "$(node_state n3)" drained

# NHC's node-mark-online; the fault again: scout's own drain.
scontrol update nodename=n3 state=resume
# Slurm marks a resumed node not responding ('*') until its slurmd answers.
n=0; until [ "$(node_state n3)" = idle ]; do n=$((n + 1)); [ $n -lt 100 ] || fail "n3 not back: $(node_state n3)"; sleep 0.2; done
stall_job
J2=$J
expect_eq "n3 reason (scout's)" "$(node_reason n3)" "scout: stall rank 4 job $J2"
expect_eq "n3 state" "$(node_state n3)" drained
expect_eq "nodes: n3 drained by scout" \
  "$("$SCOUTCTL" nodes --ledger "$SITE" --json | jq -r '.[] | select(.node == "n3") | .drained_by_scout')" true
# --no-resume records the clear only.
"$SCOUTCTL" clear n3 --reason "checked" --no-resume --ledger "$SITE" --json > "$T/clear2.json" || fail "clear --no-resume"
expect_eq "clear --no-resume action" "$(jq -r .slurm.action "$T/clear2.json")" none
expect_eq "n3 still drained" "$(node_state n3)" drained

# A reboot is pending (Slurm keeps scout's reason): clear leaves n3 to it.
scontrol reboot ASAP n3
n=0; until node_state n3 | grep -q '[@^]'; do n=$((n + 1)); [ $n -lt 50 ] || fail "no reboot pending: $(node_state n3)"; sleep 0.2; done
"$SCOUTCTL" clear n3 --reason "rebooting it" --ledger "$SITE" --json > "$T/clear3.json" || fail "clear: $(cat "$T/clear3.json")"
expect_eq "clear during a reboot: action" "$(jq -r .slurm.action "$T/clear3.json")" left
jq -r .slurm.detail "$T/clear3.json" | grep -q "a reboot is pending" || fail "clear during a reboot: $(cat "$T/clear3.json")"
case "$(node_reason n3)" in "scout: stall rank 4 job $J2"*) ;; *) fail "n3 reason during the reboot: $(node_reason n3)" ;; esac
node_state n3 | grep -q '[@^]' || fail "the clear resumed a node waiting for its reboot: $(node_state n3)"
pass "drains: NHC's reason is never replaced or resumed by scout; scout drains with its own reason; a pending reboot is left alone"
