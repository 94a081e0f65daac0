#!/bin/sh
# scout never keeps the program from running. Eight scout-run jobs started at
# the same moment on a ledger that does not exist yet (a user's first day):
# every program runs and exits 0, the ledger holds eight jobs, is intact and
# private (0600). Then a ledger scout cannot open: the program still runs,
# unobserved, after a warning; --required makes that an error (exit 3).
. "$top_srcdir/tests/integration/lib.sh"

for round in 1 2; do
  NEW=$T/new$round/ledger.db
  i=1
  while [ $i -le 8 ]; do
    "$SCOUT_RUN" -n 2 --ledger "$NEW" --runtime-dir "$T/run$round" -- "$TRAIN" --steps 20 \
      > "$T/c$round.$i.log" 2>&1 &
    eval "pid_$i=$!"
    i=$((i + 1))
  done
  i=1
  while [ $i -le 8 ]; do
    rc=0; eval "wait \$pid_$i" || rc=$?
    [ "$rc" -eq 0 ] || { cat "$T/c$round.$i.log" >&2; fail "round $round: job $i exited $rc"; }
    grep -q "done: 20 steps on 2 ranks" "$T/c$round.$i.log" || fail "round $round: job $i: the program did not run"
    if grep -q "database is locked\|unobserved" "$T/c$round.$i.log"; then fail "round $round: job $i: $(grep 'locked\|unobserved' "$T/c$round.$i.log")"; fi
    i=$((i + 1))
  done
  expect_eq "round $round: jobs in the new ledger" "$(sqlite3 "$NEW" 'select count(distinct job_id) from jobs')" 8
  expect_eq "round $round: integrity" "$(sqlite3 "$NEW" 'pragma integrity_check')" ok
  expect_eq "round $round: ledger mode" "$(stat -c %a "$NEW")" 600
  if ls "$(dirname "$NEW")" | grep -q '\.new\.'; then fail "round $round: half-made ledgers left: $(ls "$(dirname "$NEW")")"; fi
done

# A ledger scout cannot use (not SQLite): the program runs anyway.
printf 'definitely not an sqlite database, but long enough to look like one%0200d\n' 0 > "$T/text.db"
rc=0; "$SCOUT_RUN" -n 2 --ledger "$T/text.db" -- "$TRAIN" --steps 5 > "$T/u.log" 2>&1 || rc=$?
expect_eq "unobserved run exit" "$rc" 0
grep -q "warning: ledger: .*not an SQLite database.*running .* unobserved" "$T/u.log" || fail "no unobserved warning: $(cat "$T/u.log")"
grep -q "done: 5 steps on 2 ranks" "$T/u.log" || fail "the program did not run without a ledger"
expect_error 3 "--required: not running" "$SCOUT_RUN" --required -n 2 --ledger "$T/text.db" -- "$TRAIN" --steps 5
pass "8 concurrent first runs all observed; an unusable ledger never stops the program"
