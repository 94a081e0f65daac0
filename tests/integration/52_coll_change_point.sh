#!/bin/sh
# Collective-only code, change point: two ranks of an allreduce training
# loop (no point-to-point message, so the late-sender rule has nothing and
# the compute rule no strict majority), rank 1 stopped 0.3 s of every 0.5 s
# from outside after a healthy baseline. Rank 1, and only it, is named a
# straggler by its own evidence: its CPU share fell while rank 0 waited for
# it inside the collectives (source coll_change_point); once the stops end,
# the verdict is resolved. Then rank 1 shares its core with a busy loop
# from its first steps: no change point, no equivalent peer; it is named
# inconclusive (source slow_from_start) by its own wait for a CPU.
# scout-test: alone (the change-point rule compares a rank with its own past CPU share: tests beside it change every rank's share; issue: pass beside a CPU hog)
# Duration: about 65 s alone: a 12 s baseline, the verdict about 10 s after the stops start, its resolution about 10 s after they end; the hog case about 25 s.
. "$top_srcdir/tests/integration/lib.sh"
DUTY= HOG=
trap '[ -z "$DUTY" ] || kill "$DUTY" 2>/dev/null || true; cleanup' EXIT
start_run -n 2 --nodes 2 -- "$TRAIN" --steps 1000000 --step-ms 0 --features 256 --hidden 256 --batch 64
n=0; until [ "$(sqlite3 "$LEDGER" "select count(*) from ranks where job_id='$JOB'" 2>/dev/null)" = 2 ]; do
  n=$((n + 1)); [ $n -lt 300 ] || fail "job $JOB: 2 ranks never attached"; sleep 0.1; done
sleep 12
expect_eq "verdicts before the fault" "$(verdicts_json | jq length)" 0
pid=$(rank_pid 1)
( while kill -STOP "$pid" 2>/dev/null; do sleep 0.3; kill -CONT "$pid"; sleep 0.2; done ) & DUTY=$!
wait_for_verdict straggler 45
kill "$DUTY"; DUTY=; kill -CONT "$pid"
expect_verdict straggler "[1]" '["n2"]'
v=$(verdicts_json)
expect_eq "source" "$(echo "$v" | jq -r '.[0].evidence.source')" coll_change_point
expect_eq "type" "$(echo "$v" | jq -r '.[0].evidence.type')" collective
echo "$v" | jq -e '.[0].evidence.cpu_share < .[0].evidence.baseline_cpu_share and
  .[0].evidence.caused_wait > .[0].evidence.baseline_caused_wait' >/dev/null ||
  fail "the verdict's own evidence does not show rank 1 slower: $(echo "$v" | jq -c '.[0].evidence')"
echo "$v" | jq -e '.[0].evidence.cause | startswith("not runnable")' >/dev/null ||
  fail "a stopped rank's cause: $(echo "$v" | jq -c '.[0].evidence.cause')"
# Recovered: resolved after K healthy windows.
n=0; until verdicts_json | jq -e '.[0].resolved_at != null' >/dev/null 2>&1; do
  n=$((n + 1)); [ $n -lt 150 ] || fail "rank 1 recovered but its verdict was not resolved in 30 s: $(verdicts_json)"; sleep 0.2; done
expect_eq "verdicts in all" "$(verdicts_json | jq -c '[.[] | [.kind, .ranks]]')" '[["straggler",[1]]]'
stop_run

# Slow from the start: rank 1 shares its core with a busy loop from its
# first steps (rank 0 alone on the other core). It has no earlier normal
# (no change point) and no equivalent peers (two ranks): it is named
# inconclusive, by its own run-queue wait, with the other rank's beside it.
command -v taskset >/dev/null || fail "taskset not found (util-linux)"
next_job
taskset -c 1 sh -c 'while :; do :; done' & HOG=$!
trap '[ -z "$DUTY" ] || kill "$DUTY" 2>/dev/null || true; [ -z "$HOG" ] || kill "$HOG" 2>/dev/null || true; cleanup' EXIT
start_run -n 2 --nodes 2 -- "$TRAIN" --steps 1000000 --step-ms 0 --features 256 --hidden 256 --batch 64
n=0; until [ "$(sqlite3 "$LEDGER" "select count(*) from ranks where job_id='$JOB'" 2>/dev/null)" = 2 ]; do
  n=$((n + 1)); [ $n -lt 300 ] || fail "job $JOB: 2 ranks never attached"; sleep 0.1; done
for t in $(ls /proc/"$(rank_pid 0)"/task); do taskset -p -c 0 "$t" >/dev/null; done
for t in $(ls /proc/"$(rank_pid 1)"/task); do taskset -p -c 1 "$t" >/dev/null; done
wait_for_verdict straggler 60
kill "$HOG"; HOG=
v=$(verdicts_json)
expect_eq "verdicts (slow from the start)" "$(echo "$v" | jq -c '[.[] | [.kind, .status, .ranks, .evidence.source]]')" \
  '[["straggler","inconclusive",[1],"slow_from_start"]]'
echo "$v" | jq -e '.[0].evidence | .runq_share > .others_runq_share + 0.2 and .own_wait < .others_own_wait and
  (.cause | startswith("runnable and waiting for a CPU"))' >/dev/null ||
  fail "rank 1's own evidence: $(echo "$v" | jq -c '.[0].evidence')"
stop_run
pass "collective-only change point: the stopped rank of two named by its own evidence, resolved once it runs again; a rank sharing its core with a hog from the start named inconclusive"
