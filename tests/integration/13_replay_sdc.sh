#!/bin/sh
# Replay on idle cores (4 simulated nodes x 2 cores), with a real bit flip
# in one replay result (SCOUT_REPLAY_FAULT): recurring on n2 core 1 -> one
# sdc verdict naming n2, core 1 and the recipe; a one-shot flip -> no sdc, one
# transient record; n2 and n3 corrupted identically -> no strict majority:
# sdc inconclusive naming nobody; a healthy run -> clean cycles, no sdc; the
# deciding observer lost -> the survivors continue the cycles, no row lost.
. "$top_srcdir/tests/integration/lib.sh"
REPLAY="--scoutd-arg=--replay-interval=1 --scoutd-arg=--replay-budget=0.5 --scoutd-arg=--replay-sched=normal --scoutd-arg=--replay-cores=0,1"

count() { verdicts_json | jq --arg k "$1" "map(select(.kind == \$k)) | length"; }

# --- recurring ---------------------------------------------------------------
SCOUT_REPLAY_FAULT="node=n2,core=1,recipe=gemm_f64,bit=17,mode=recurring" \
  start_run -n 4 --nodes 4 $REPLAY -- "$TRAIN" --steps 100000
wait_for_verdict sdc 60
kill -INT "$RUN_PID"; finish_run
v=$(verdicts_json)
expect_eq "sdc verdicts" "$(count sdc)" 1
expect_eq "transient (recurring)" "$(count transient)" 0
s=$(echo "$v" | jq -c 'map(select(.kind=="sdc"))[0]')
expect_eq "status" "$(echo "$s" | jq -r .status)" attributed
expect_eq "hosts" "$(echo "$s" | jq -c .hosts)" '["n2"]'
expect_eq "ranks" "$(echo "$s" | jq -c .ranks)" '[1]'
expect_eq "source" "$(echo "$s" | jq -r .evidence.source)" replay
expect_eq "core" "$(echo "$s" | jq -r .evidence.core)" 1
expect_eq "device" "$(echo "$s" | jq -r .evidence.device)" cpu1
expect_eq "recipe" "$(echo "$s" | jq -r .evidence.recipe)" gemm_f64
expect_eq "agreeing devices" "$(echo "$s" | jq -r .evidence.agreeing_devices)" 7
expect_eq "re-runs differing" "$(echo "$s" | jq -r .evidence.reruns_differing)" 2
[ "$(echo "$s" | jq -r .evidence.signature)" != "$(echo "$s" | jq -r .evidence.majority_signature)" ] ||
  fail "signatures: $s"
"$SCOUTCTL" query "$JOB" | grep -E "^[0-9]+ +sdc +attributed +1 +n2 .*cpu1 gemm_f64 cycle" >/dev/null || fail "query text: $("$SCOUTCTL" query "$JOB")"
expect_eq "dissent cycle recorded" \
  "$(sqlite3 "$LEDGER" "select count(*) > 0 from replay_cycles where job_id='$JOB' and outcome='dissent'")" 1
expect_eq "clean cycles while n2 core 1 flips" \
  "$(sqlite3 "$LEDGER" "select count(*) from replay_cycles where job_id='$JOB' and outcome='clean'")" 0
assert_no_leftovers

# --- once --------------------------------------------------------------------
JOB=$((JOB + 1))
SCOUT_REPLAY_FAULT="node=n3,core=0,recipe=transcendental,bit=3,mode=once" \
  start_run -n 4 --nodes 4 $REPLAY -- "$TRAIN" --steps 100000
wait_for_verdict transient 60
kill -INT "$RUN_PID"; finish_run
expect_eq "sdc (once)" "$(count sdc)" 0
expect_eq "transient (once)" "$(count transient)" 1
t=$(verdicts_json | jq -c 'map(select(.kind=="transient"))[0]')
expect_eq "transient status" "$(echo "$t" | jq -r .status)" advisory
expect_eq "transient host" "$(echo "$t" | jq -c .hosts)" '["n3"]'
expect_eq "transient recipe" "$(echo "$t" | jq -r .evidence.recipe)" transcendental
expect_eq "transient re-runs differing" "$(echo "$t" | jq -r .evidence.reruns_differing)" 0

# --- two of four nodes corrupted identically ---------------------------------
JOB=$((JOB + 1))
SCOUT_REPLAY_FAULT="node=n2+n3,core=*,recipe=int_bit,bit=5,mode=recurring" \
  start_run -n 4 --nodes 4 $REPLAY -- "$TRAIN" --steps 100000
wait_for_verdict sdc 60
kill -INT "$RUN_PID"; finish_run
expect_eq "sdc (tie)" "$(count sdc)" 1
s=$(verdicts_json | jq -c 'map(select(.kind=="sdc"))[0]')
expect_eq "tie status" "$(echo "$s" | jq -r .status)" inconclusive
expect_eq "tie ranks" "$(echo "$s" | jq -c .ranks)" '[]'
expect_eq "tie hosts" "$(echo "$s" | jq -c .hosts)" '[]'
expect_eq "tie groups" "$(echo "$s" | jq '.evidence.values | map(.devices | length) | sort')" "$(printf '[\n  4,\n  4\n]')"

# --- healthy -----------------------------------------------------------------
JOB=$((JOB + 1))
start_run -n 4 --nodes 4 $REPLAY -- "$TRAIN" --steps 100000
n=0
while [ "$(sqlite3 "$LEDGER" "select count(*) from replay_cycles where job_id='$JOB' and outcome='clean'" 2>/dev/null || echo 0)" -lt 2 ]; do
  n=$((n + 1)); [ $n -lt 300 ] || fail "no two clean replay cycles in 60 s"
  sleep 0.2
done
kill -INT "$RUN_PID"; finish_run
expect_eq "healthy verdicts" "$(verdicts_json | jq length)" 0
expect_eq "devices per cycle" "$(sqlite3 "$LEDGER" "select distinct devices from replay_cycles where job_id='$JOB'")" 8

# --- the deciding observer (n1) is SIGKILLed ----------------------------------
# n2 takes over and continues the cycle numbering: every cycle row written
# before the loss is kept, later ones come from the 3 survivors.
JOB=$((JOB + 1))
start_run -n 4 --nodes 4 $REPLAY -- "$TRAIN" --steps 100000
clean_cycles() { sqlite3 "$LEDGER" "select count(*) from replay_cycles where job_id='$JOB' and outcome='clean' and observers=$1" 2>/dev/null || echo 0; }
n=0
while [ "$(clean_cycles 4)" -lt 2 ]; do
  n=$((n + 1)); [ $n -lt 300 ] || fail "no two clean replay cycles in 60 s"; sleep 0.2
done
kill -KILL "$(scoutd_pid "$LEDGER" "$JOB" n1)"
before=$(sqlite3 "$LEDGER" "select group_concat(cycle) from replay_cycles where job_id='$JOB' and observers=4")
n=0
while [ "$(clean_cycles 3)" -lt 1 ]; do
  n=$((n + 1)); [ $n -lt 300 ] || fail "no replay cycle after n1 was lost: $(grep -v '^step' "$T/run.log" | tail -5)"; sleep 0.2
done
kill -INT "$RUN_PID"; finish_run
expect_eq "cycles of 4 kept after the loss" "$(sqlite3 "$LEDGER" "select group_concat(cycle) from replay_cycles where job_id='$JOB' and observers=4")" "$before"
expect_eq "cycles after the loss are new ones" \
  "$(sqlite3 "$LEDGER" "select count(*) from replay_cycles where job_id='$JOB' and observers=3 and cycle <= (select max(cycle) from replay_cycles where job_id='$JOB' and observers=4)")" 0
expect_eq "verdicts (root lost)" "$(verdicts_json | jq -c '[.[] | [.kind, .hosts]]')" '[["observer_lost",["n1"]]]'
pass "replay: recurring flip -> sdc n2 core 1; once -> transient; tie -> inconclusive; healthy -> none; root lost -> numbering continues"
