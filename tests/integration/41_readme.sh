#!/bin/sh
# README's "Using it" block runs as written after `make demo`: every line,
# from the top of a tree whose build/ is this build, with the user's default
# ledger (~/.local/state/scout/ledger.db in a fresh HOME). `<jobid>` is the
# job the last scout-run started, `<pid>` the culprit's pid in its first
# verdict. A job started with `&` runs while the next lines use it; a job
# with a fault must get the verdict its fault calls for (stop: stall,
# deadlock: deadlock, slow: straggler, gpuhang: gpu_hang); a job whose
# comment says "Ctrl-C ends it" gets SIGINT once its verdict is there, any
# other must end by itself. A command exits 0 unless its comment documents
# another status ("exit 1 if none").
# Duration: about 85 s with -j3: every job of the README block, run to its verdict or end as a user would.
. "$top_srcdir/tests/integration/lib.sh"
[ -x "$B/examples/nccl_train" ] || { echo "SKIP: no NCCL headers at configure time: README's NCCL example cannot run"; exit 77; }
W=$T/readme
mkdir -p "$W/home"
ln -s "$B" "$W/build"
unset SCOUT_LEDGER XDG_STATE_HOME
export HOME="$W/home"
DB=$HOME/.local/state/scout/ledger.db
# The block, continuation lines joined.
awk '/^## Using it/ { u = 1 } u && /^```sh/ { b = 1; next } b && /^```/ { exit } b' "$top_srcdir/README.md" |
  sed -e ':a' -e '/\\$/N; s/\\\n *//; ta' > "$T/block"
[ "$(grep -c 'scout-run' "$T/block")" -ge 4 ] || fail "README's Using it block not found: $(cat "$T/block")"
cd "$W"

job= bg= bg_comment= lines=0
verdicts() { build/cli/scoutctl query "$1" --json 2>/dev/null; }
# end_job PID JOB COMMENT: a job started before ends, by itself or by Ctrl-C.
end_job() {
  p=$1 j=$2 c=$3 n=0
  case "$c" in *Ctrl-C*) kill -INT "$p" 2>/dev/null || true ;; esac
  while kill -0 "$p" 2>/dev/null; do
    n=$((n + 1)); [ $n -lt 600 ] || { kill -INT "$p"; fail "job $j did not end within 120 s: $(tail -5 "$T/job.$j.log")"; }
    sleep 0.2
  done
  rc=0; wait "$p" || rc=$?
  RUN_PID=
  case "$c" in *Ctrl-C*) ;; *) [ "$rc" -eq 0 ] || fail "job $j exited $rc: $(grep -v '^20' "$T/job.$j.log" | tail -5)" ;; esac
  [ "$rc" -ne 126 ] && [ "$rc" -ne 127 ] || fail "job $j: command not found or not runnable ($rc): $(tail -3 "$T/job.$j.log")"
}

while IFS= read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  cmd=${line%% #*}
  comment=
  [ "$cmd" = "$line" ] || comment=${line#*# }
  lines=$((lines + 1))
  case "$cmd" in
    *scout-run*)
      [ -z "$bg" ] || end_job "$bg" "$job" "$bg_comment"
      bg=
      background=no
      case "$cmd" in *'&'*) background=yes; cmd=${cmd%%&*} ;; esac
      log=$T/job.next.log
      sh -c "exec env $cmd" < /dev/null > "$log" 2>&1 &
      pid=$!
      RUN_PID=$pid  # interrupted by lib.sh's cleanup if this test fails
      n=0
      until job=$(sed -n 's/^scout-run: job \([0-9]*\) (ledger .*/\1/p' "$log" | head -1) && [ -n "$job" ]; do
        n=$((n + 1)); [ $n -lt 150 ] || fail "no 'scout-run: job N' from: $cmd: $(tail -5 "$log")"
        kill -0 "$pid" 2>/dev/null || { sleep 0.5; job=$(sed -n 's/^scout-run: job \([0-9]*\) (ledger .*/\1/p' "$log" | head -1); [ -n "$job" ] || fail "$cmd: exited: $(tail -5 "$log")"; }
        sleep 0.2
      done
      mv "$log" "$T/job.$job.log"
      want=
      case "$cmd" in
        *--fault\ stop*) want=stall ;; *--fault\ deadlock*) want=deadlock ;;
        *--fault\ slow*) want=straggler ;; *--fault\ gpuhang*) want=gpu_hang ;;
        *--fault*) fail "README example with a fault this test does not know: $cmd" ;;
      esac
      if [ -n "$want" ]; then
        n=0
        until [ "$(verdicts "$job" | jq --arg k "$want" 'map(select(.kind == $k and .status == "attributed")) | length' 2>/dev/null || echo 0)" -gt 0 ] 2>/dev/null; do
          n=$((n + 1)); [ $n -lt 600 ] || fail "no attributed $want verdict for job $job ($cmd) within 120 s: $(build/cli/scoutctl query "$job" 2>&1); job log: $(grep -v '^20' "$T/job.$job.log" | tail -5)"
          sleep 0.2
        done
        echo "job $job: $want verdict"
      fi
      if [ "$background" = yes ]; then bg=$pid bg_comment=$comment
      else end_job "$pid" "$job" "$comment"
      fi
      ;;
    *)
      [ -n "$job" ] || case "$cmd" in *'<'*) fail "'$cmd' before any scout-run" ;; esac
      culprit=$(verdicts "$job" | jq -r '[.[] | .evidence.culprits[0].pid // empty][0] // empty' 2>/dev/null || true)
      case "$cmd" in *'<pid>'*) [ -n "$culprit" ] || fail "no culprit pid in job $job's verdicts for: $cmd" ;; esac
      run=$(printf '%s' "$cmd" | sed -e "s/<jobid>/$job/g" -e "s/<pid>/$culprit/g")
      rc=0
      sh -c "$run" < /dev/null > "$T/out" 2>&1 || rc=$?
      ok=0
      case "$comment" in *"exit $rc "*|*"exit $rc)"*) ok=1 ;; esac
      [ "$rc" -eq 0 ] || [ $ok -eq 1 ] || fail "'$run' exited $rc: $(tail -5 "$T/out")"
      echo "ok ($rc): $run"
      ;;
  esac
done < "$T/block"
[ -z "$bg" ] || end_job "$bg" "$job" "$bg_comment"
# What the README says the user sees at the end: the verdicts in the ledger.
[ -f "$DB" ] || fail "no ledger at $DB"
for k in stall deadlock straggler gpu_hang; do
  [ "$(sqlite3 "$DB" "select count(*) from verdicts where kind='$k' and status='attributed'")" -ge 1 ] || fail "no $k verdict in $DB"
done
pass "README: all $lines commands of 'Using it' ran as written"
