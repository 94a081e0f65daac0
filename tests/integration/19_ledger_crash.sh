#!/bin/sh
# Crash consistency of verdict commits: a writer using the ledger code scoutd
# uses is SIGKILLed at a random moment during verdict writes, 100 times. After
# every kill, PRAGMA integrity_check is ok, and every verdict the writer
# reported as committed is in the ledger exactly once.
# Duration: about 85 s with -j3: 100 SIGKILLs of a writer at random moments, each followed by an integrity check.
. "$top_srcdir/tests/integration/lib.sh"
W=$B/tests/integration/ledger_writer
DB=$T/crash.db
next=0
i=1
while [ $i -le 100 ]; do
  "$W" write "$DB" 77 "$next" 100000 > "$T/w.out" 2>"$T/w.err" &
  pid=$!
  # 20-200 ms into the writes.
  sleep "0.$(( (i * 37) % 18 + 2 ))"
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  expect_eq "kill $i: integrity" "$(sqlite3 "$DB" 'pragma integrity_check')" ok
  last=$(sed -n 's/^committed //p' "$T/w.out" | tail -1)
  if [ -n "$last" ]; then
    # Every reported commit exists once (the vkey is unique, so count them).
    got=$(sqlite3 "$DB" "select count(*) from verdicts where job_id='77' and cast(substr(vkey, length('77.0.o0.1.') + 1) as integer) between $next and $last")
    expect_eq "kill $i: verdicts $next..$last committed" "$got" "$((last - next + 1))"
    next=$((last + 1))
  fi
  # The next writer starts after what the ledger holds (a commit may have
  # landed after the last line was printed).
  held=$(sqlite3 "$DB" "select coalesce(max(cast(substr(vkey, length('77.0.o0.1.') + 1) as integer)), -1) from verdicts where job_id='77'")
  [ "$held" -ge "$next" ] && next=$((held + 1))
  i=$((i + 1))
done
expect_eq "duplicates" "$(sqlite3 "$DB" "select count(*) - count(distinct vkey) from verdicts")" 0
pass "100 SIGKILLs during verdict commits: integrity ok, every reported commit present once ($next verdicts)"
