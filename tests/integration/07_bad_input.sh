#!/bin/sh
# Bad input gets a clear error naming what was expected; nothing crashes and
# nothing committed is lost.
. "$top_srcdir/tests/integration/lib.sh"

# Options.
expect_error 2 "--nodes: 0 is out of range" "$SCOUT_RUN" --nodes 0 -- true
expect_error 2 "--nodes: 5 nodes for 4 ranks" "$SCOUT_RUN" -n 4 --nodes 5 -- true
expect_error 2 "--stall-threshold: 'abc' is not a number" "$SCOUT_RUN" --stall-threshold abc -- true
expect_error 2 "--job-id: 'x7' is not a job id" "$SCOUT_RUN" --job-id x7 -- true
expect_error 2 "missing PROGRAM" "$SCOUT_RUN" -n 2
expect_error 2 "unknown option '--bogus'" "$SCOUT_RUN" --bogus -- true
expect_error 2 "--fault: unknown kind 'explode'" mpirun -np 1 "$TRAIN" --fault explode:rank=1:step=2
expect_error 2 "needs rank=R and step=S" mpirun -np 1 "$TRAIN" --fault stop:rank=1
expect_error 2 "--fault rank: 'x' is not an integer" mpirun -np 1 "$TRAIN" --fault stop:rank=x:step=1
expect_error 2 "--stall-threshold: 'soon' is not a number" "$B/scoutd/scoutd" --stall-threshold soon

# scoutctl: malformed job id, unknown job, missing / non-SQLite ledger.
expect_error 2 "'12ab' is not a job id" "$SCOUTCTL" query 12ab
expect_error 4 "no such ledger file" "$SCOUTCTL" query 5 --ledger "$T/none.db"
printf 'definitely not an sqlite database, but long enough to look like one%0200d\n' 0 > "$T/text.db"
cp "$T/text.db" "$T/text.orig"
expect_error 4 "not an SQLite database; expected a scout ledger" "$SCOUTCTL" query 5 --ledger "$T/text.db"
expect_error 3 "not an SQLite database" "$SCOUT_RUN" --required --ledger "$T/text.db" -- true
cmp -s "$T/text.db" "$T/text.orig" || fail "a non-SQLite ledger file was modified"
expect_error 5 "has no running scoutd" "$SCOUTCTL" status 424242

# shm records with the wrong magic and the wrong version: refused by name,
# the observer keeps running, the run ends normally with no verdict.
printf 'NOTSCOUT' > /dev/shm/scout.$JOB.0.0
head -c 65536 /dev/zero >> /dev/shm/scout.$JOB.0.0
{ printf 'SOUTPRB1\001\000\000\000'; head -c 65536 /dev/zero; } > /dev/shm/scout.$JOB.0.1
start_run -n 2 --nodes 1 --stall-threshold 1 -- sleep 3
finish_run
expect_eq "exit status with bad records" "$RUN_RC" 0
grep -q "scout.$JOB.0.0 refused: bad magic" "$T/run.log" || fail "wrong magic not reported"
grep -q "scout.$JOB.0.1 refused: record version 1; expected version 5" "$T/run.log" || fail "wrong version not reported"
expect_eq "verdicts" "$(verdicts_json | jq length)" 0
assert_no_leftovers

# A committed verdict survives a later run against a bad path and is still
# served (ledger files are never truncated by scout).
sqlite3 "$LEDGER" "insert into verdicts(job_id,step,kind,status,ranks,hosts,evidence,detected_at) values('$JOB','0','stall','attributed','[1]','[\"n1\"]','{}','2026-01-01T00:00:00Z')"
expect_error 2 "already in the ledger" "$SCOUT_RUN" --job-id "$JOB" -- true
expect_eq "committed verdict kept" "$(verdicts_json | jq -c '[.[].ranks]')" "[[1]]"
pass "bad input: clear errors, nothing lost"
