#!/bin/sh
# An observer that freezes and comes back (a node pause, a swap storm, a
# network blip): n2's scoutd SIGSTOPped for 6 s, then continued. The others
# record observer_lost for it; the returning scoutd, a minority of one,
# decides nothing and asks back in; it rejoins, the loss verdict is resolved,
# and n2's ranks are observed again (a stall of rank 3, on n2, after the
# return is named).
. "$top_srcdir/tests/integration/lib.sh"
start_run -n 8 --nodes 4 --stall-threshold 2 -- "$TRAIN" --steps 900 --step-ms 25 --fault stop:rank=3:step=600
p=$(scoutd_pid "$LEDGER" "$JOB" n2)
sleep 2
kill -STOP "$p"
wait_for_verdict observer_lost 20
sleep 4
kill -CONT "$p"
# The loss is resolved once n2's scoutd is back.
n=0
until [ "$(verdicts_json | jq '[.[] | select(.kind == "observer_lost" and .resolved_at != null)] | length')" = 1 ]; do
  n=$((n + 1)); [ $n -lt 100 ] || fail "observer_lost not resolved after n2's scoutd came back: $(verdicts_json)"
  sleep 0.2
done
# Rank 3 (on n2) stops later: only n2's scoutd sees its process.
wait_for_verdict stall 40
v=$(verdicts_json | jq -c '[.[] | select(.kind == "stall")][0]')
expect_eq "stall ranks" "$(echo "$v" | jq -c .ranks)" "[3]"
expect_eq "stall hosts" "$(echo "$v" | jq -c .hosts)" '["n2"]'
kill -CONT "$(rank_pid 3)"
finish_run
expect_eq "exit status" "$RUN_RC" 0
grep -q "done: 900 steps on 8 ranks" "$T/run.log" || fail "training did not finish"
grep -q "scoutd: n2: .*no strict majority: deciding nothing and asking to rejoin\|scoutd: n2: the other observers declared this one lost; asking to rejoin" "$T/run.log" ||
  fail "n2 did not say it was cut off: $(grep 'scoutd: n2' "$T/run.log" | tail -5)"
grep -q "scoutd: n2: rejoined the observers" "$T/run.log" || fail "n2 did not rejoin: $(grep 'scoutd: n2' "$T/run.log" | tail -5)"
grep -q "observer 1 (n2) rejoined" "$T/run.log" || fail "the others did not take n2 back"
[ "$(verdicts_json | jq '[.[] | select(.kind == "observer_lost")] | length')" = 1 ] ||
  fail "observer_lost rows: $(verdicts_json | jq -c '[.[] | select(.kind == "observer_lost") | {ranks, hosts, detected_at, resolved_at, evidence}]'); observers said: $(grep -E 'observer|rejoin|majority|lost|minority' "$T/run.log")"
assert_no_leftovers
pass "observer rejoin: n2's scoutd frozen 6 s, lost, back, loss resolved, its ranks observed again"
