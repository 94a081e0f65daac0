#!/bin/sh
# The control socket: handshake, garbage and a 1 MB line get errors, the
# scoutd keeps serving, another user is refused (peer credentials), JSON
# format works, VERDICTS shows committed verdicts.
. "$top_srcdir/tests/integration/lib.sh"
start_run -n 4 --nodes 2 --stall-threshold 1 -- "$TRAIN" --steps 200 --fault stop:rank=1:step=20
wait_for_verdict stall 20
SOCK=$SCOUT_RUNTIME_DIR/$JOB/scoutd.n1.sock
[ -S "$SOCK" ] || fail "no control socket at $SOCK"
ask() { printf "$1" | socat -t 5 - "UNIX-CONNECT:$SOCK"; }

ask 'STATUS\n' | grep -q "^ERROR: expected 'HELLO 1' first" || fail "STATUS before HELLO accepted"
ask 'HELLO 9\n' | grep -q "^ERROR: unsupported protocol version '9'; this scoutd speaks 1" || fail "version mismatch not refused"
ask 'HELLO 1\n\001\002garbage\377\nQUIT\n' > "$T/g"
grep -q "^ERROR: unknown command" "$T/g" || fail "garbage not refused: $(cat "$T/g")"
head -c 1048576 /dev/zero | tr '\0' 'A' > "$T/big"
{ printf 'HELLO 1\n'; cat "$T/big"; printf '\n'; } | socat -t 5 - "UNIX-CONNECT:$SOCK" > "$T/b" || true
grep -q "^ERROR: line too long" "$T/b" || fail "1 MB line not refused: $(head -c 300 "$T/b")"
# Another user is refused by peer credentials, even where the file modes
# would let it connect (the runtime directory is normally 0700).
chmod o+x "$T" "$SCOUT_RUNTIME_DIR" "$SCOUT_RUNTIME_DIR/$JOB" && chmod o+rw "$SOCK"
setpriv --reuid=65534 --regid=65534 --clear-groups timeout 10 socat -u "UNIX-CONNECT:$SOCK" - > "$T/other" 2>&1 || true
chmod o-x "$T" "$SCOUT_RUNTIME_DIR" "$SCOUT_RUNTIME_DIR/$JOB"
grep -q "^ERROR: permission denied: uid 65534 is neither the job's owner (uid $(id -u)) nor root" "$T/other" ||
  fail "another user was not refused: $(cat "$T/other")"
grep -q "RANK" "$T/other" && fail "another user got the status"
# Still serving, in both formats, with the committed verdict.
r=$(ask 'HELLO 1\nSTATUS\nSET FORMAT json\nVERDICTS\nQUIT\n')
echo "$r" | head -1 | grep -q "^SCOUTD 1 job $JOB node n1" || fail "bad greeting: $r"
echo "$r" | grep -q "RANK .*PID" || fail "no text status: $r"
echo "$r" | grep '^\[' | jq -e '.[0].kind == "stall" and .[0].ranks == [1]' >/dev/null || fail "VERDICTS json: $r"
id=$(echo "$r" | grep '^\[' | jq '.[0].id')
expect_eq "socket verdict is committed" "$(sqlite3 "$LEDGER" "select kind from verdicts where id=$id")" stall
kill -CONT "$(rank_pid 1)"
finish_run
expect_eq "exit status" "$RUN_RC" 0
pass "control socket: errors for bad input, still serving"
