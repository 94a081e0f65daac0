#!/bin/sh
# Checkpoint certification: a checkpoint written in a clean period becomes
# recovery_verified after the next clean replay cycle; one written after the
# onset of a recurring fault (n2 core 1 flips from replay cycle 2 on) is
# rejected when that cycle's sdc verdict arrives; scoutctl recovery returns
# the verified one, and exits 1 when there is none. When the deciding
# observer is lost, its successor goes on certifying.
. "$top_srcdir/tests/integration/lib.sh"
CK=$T/ckpt
mkdir -p "$CK"
echo "old" > "$CK/before-the-job"   # present at start: not a checkpoint of this job
SCOUT_REPLAY_FAULT="node=n2,core=1,recipe=fma_chain,bit=9,mode=recurring,after=2" \
  start_run -n 4 --nodes 4 --ckpt-dir "$CK" --scoutd-arg=--ckpt-settle=0.5 \
  --scoutd-arg=--replay-interval=0 --scoutd-arg=--replay-budget=0.5 --scoutd-arg=--replay-sched=normal \
  --scoutd-arg=--replay-cores=0,1 -- "$TRAIN" --steps 100000

ck_state() { "$SCOUTCTL" checkpoints "$JOB" --json 2>/dev/null | jq -r --arg p "$CK/$1" 'map(select(.path == $p))[0].state // "none"'; }
wait_state() {  # NAME STATE TIMEOUT_S
  n=0
  while [ "$(ck_state "$1")" != "$2" ]; do
    n=$((n + 1)); [ $n -lt $(($3 * 5)) ] || fail "checkpoint $1 not $2 within $3 s: $("$SCOUTCTL" checkpoints "$JOB" 2>&1)"
    sleep 0.2
  done
}
n=0
until ls "$SCOUT_RUNTIME_DIR/$JOB"/scoutd.*.sock >/dev/null 2>&1 && [ "$(ls "$SCOUT_RUNTIME_DIR/$JOB"/scoutd.*.sock | wc -l)" -eq 4 ]; do
  n=$((n + 1)); [ $n -lt 150 ] || fail "scoutds did not start"; sleep 0.2
done

mkdir "$CK/step-100"; echo weights > "$CK/step-100/model.bin"
wait_state step-100 candidate 20
"$SCOUTCTL" recovery "$JOB" > "$T/rec.out" 2> "$T/rec.err" && fail "recovery succeeded with no verified checkpoint"
grep -q "no recovery_verified checkpoint" "$T/rec.err" || fail "recovery message: $(cat "$T/rec.err")"
"$SCOUTCTL" replay "$JOB" | grep -q "replay cycle requested" || fail "scoutctl replay"
wait_state step-100 recovery_verified 30

mkdir "$CK/step-200"; echo weights > "$CK/step-200/model.bin"
wait_state step-200 candidate 20
"$SCOUTCTL" replay "$JOB" >/dev/null || fail "scoutctl replay (2)"
wait_state step-200 rejected 30
wait_for_verdict sdc 10
expect_eq "recovery" "$("$SCOUTCTL" recovery "$JOB")" "$CK/step-100"
"$SCOUTCTL" checkpoints "$JOB" | grep -q "^rejected .*step-200" || fail "checkpoints text: $("$SCOUTCTL" checkpoints "$JOB")"
reason=$("$SCOUTCTL" checkpoints "$JOB" --json | jq -r 'map(select(.state=="rejected"))[0].reason')
echo "$reason" | grep -q "sdc verdict" || fail "rejection reason: $reason"
expect_eq "checkpoints seen" "$("$SCOUTCTL" checkpoints "$JOB" --json | jq length)" 2
kill -INT "$RUN_PID"; finish_run
s=$(verdicts_json | jq -c 'map(select(.kind=="sdc"))[0]')
expect_eq "sdc host" "$(echo "$s" | jq -c .hosts)" '["n2"]'
expect_eq "sdc cycle" "$(echo "$s" | jq .evidence.cycle)" 2
# After the job, the ledger still answers.
expect_eq "recovery after the job" "$("$SCOUTCTL" recovery "$JOB" --json | jq -r .path)" "$CK/step-100"

# The deciding observer (n1) is SIGKILLed: its successor watches the
# directory from then on, and certifies a checkpoint written after the loss.
JOB=$((JOB + 1))
rm -rf "$CK"; mkdir -p "$CK"
start_run -n 4 --nodes 4 --ckpt-dir "$CK" --scoutd-arg=--ckpt-settle=0.5 \
  --scoutd-arg=--replay-interval=0 --scoutd-arg=--replay-budget=0.5 --scoutd-arg=--replay-sched=normal \
  --scoutd-arg=--replay-cores=0,1 -- "$TRAIN" --steps 100000
n=0
until [ "$(ls "$SCOUT_RUNTIME_DIR/$JOB"/scoutd.*.sock 2>/dev/null | wc -l)" -eq 4 ]; do
  n=$((n + 1)); [ $n -lt 150 ] || fail "scoutds did not start"; sleep 0.2
done
kill -KILL "$(scoutd_pid "$LEDGER" "$JOB" n1)"
wait_for_verdict observer_lost 20
mkdir "$CK/step-300"; echo weights > "$CK/step-300/model.bin"
wait_state step-300 candidate 20
"$SCOUTCTL" replay "$JOB" | grep -q "replay cycle requested" || fail "scoutctl replay after the loss"
wait_state step-300 recovery_verified 30
kill -INT "$RUN_PID"; finish_run
expect_eq "recovery after the loss" "$("$SCOUTCTL" recovery "$JOB")" "$CK/step-300"
pass "checkpoints: clean -> recovery_verified, after sdc onset -> rejected; recovery names the verified one; certified by the successor after a root loss"
