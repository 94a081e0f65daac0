#!/bin/sh
# The job's runtime directory and whose scoutd root's scoutctl believes
# (issue 34, parts 5 and 6). Another user is uid 65534; this cluster's
# /run/scout is 1777 (tests/cluster/cluster.sh), as older installs left it,
# so she can make names in it. Each attack follows a control that shows the
# same setup works where it is legitimate (so a refusal is the defence, not
# a broken setup).
#  1. Names of the next job planted on n1: her directory with a fake scoutd
#     ("all fine") and directories at the names the old scheme used. The job
#     gets root's new directory (the job user's, 0700), hers is moved aside,
#     and root's scoutctl reads the real scoutd.
#  2. The job's user moves her running job's directory away and the other
#     user makes the name again, 0700, with the fake: root's scoutctl
#     refuses it (the job's user is Slurm's word, not the directory owner's).
#  3. Root's scoutctl without a runtime directory exits 2 and never asks
#     the fake planted at /tmp/scout-0; named explicitly, the fake is refused.
#  4. --scout-ckpt-dir that reaches slurmstepd without srun's check: a path
#     under a directory only root can read gives the same answer whether it
#     exists or not.
#  5. Her LD_PRELOAD of 5000 and 60000 bytes: kept whole, the probe first.
. "$top_srcdir/tests/integration/slurm_lib.sh"
NOBODY=65534
FAKE=$CL.fake-scoutd        # /var/tmp: seen by the nodes too
SECRET=/var/tmp/scout-secret.$$
trap 'pkill -KILL -f -- "$FAKE" 2>/dev/null || true; rm -rf "$FAKE" "$SECRET" "$CL.ckpt"; slurm_cleanup' EXIT
start_cluster
PROBE=$B/probe/.libs/libscout_probe.so

# A fake scoutd: greets, says all is fine, and notes each connection in $1.
cat > "$FAKE" <<'EOF'
#!/bin/sh
echo asked >> "$1"
while IFS= read -r l; do
  case "$l" in
    STATUS*) echo '{"fake":"all fine","ranks":[]}' ;;
    QUIT*) echo OK; exit 0 ;;
  esac
  echo OK
done
EOF
chmod 0755 "$FAKE"
# fake_on NODE SOCKET LOG: the fake listening at SOCKET on NODE, as uid 65534
# (cluster.sh execs nsenter, setpriv execs socat: $! is socat's pid).
fake_on() {
  "$top_srcdir/tests/cluster/cluster.sh" on "$CL" "$1" setpriv --reuid $NOBODY --regid $NOBODY --clear-groups \
    socat UNIX-LISTEN:"$2",fork SYSTEM:"$FAKE $3" > /dev/null 2>&1 &
  FAKE_PID=$!
  n=0; until on "$1" test -S "$2"; do n=$((n + 1)); [ $n -lt 50 ] || fail "the fake did not listen at $2"; sleep 0.1; done
}
stop_fake() { kill "$FAKE_PID" 2>/dev/null || true; wait "$FAKE_PID" 2>/dev/null || true; }

# --- 1. names of the next job, planted on n1 -------------------------------------
NEXT=$(( $(srun -N1 -n1 -w n1 printenv SLURM_JOB_ID) + 1 ))
on n1 sh -c "setpriv --reuid $NOBODY --regid $NOBODY --clear-groups sh -c 'mkdir -m 0777 $RUNDIR/$NEXT && : > $RUNDIR/$NEXT/asked && chmod 666 $RUNDIR/$NEXT/asked'" ||
  fail "could not plant $RUNDIR/$NEXT as uid $NOBODY"
# The old scheme's names: \$NEXT.new.PID (its slurmstepd's pid) for the pids
# to come, each a directory with a file in it (rmdir fails, mkdir fails).
last=$(cat /proc/sys/kernel/ns_last_pid)
on n1 setpriv --reuid $NOBODY --regid $NOBODY --clear-groups sh -c \
  "for p in \$(seq $((last + 1)) $((last + 400))); do mkdir $RUNDIR/$NEXT.new.\$p && : > $RUNDIR/$NEXT.new.\$p/x; done" ||
  fail "could not plant the old scheme's names"
fake_on n1 "$RUNDIR/$NEXT/scoutd.n1.sock" "$RUNDIR/$NEXT/asked"
# Control: the fake convinces its own user (scoutctl trusts the caller's own scoutd).
out=$(on n1 setpriv --reuid $NOBODY --regid $NOBODY --clear-groups "$SCOUTCTL" status "$NEXT" --json) ||
  fail "control: the fake did not answer its own user"
expect_eq "control: the fake's status" "$(echo "$out" | jq -r .fake)" "all fine"
srun --scout=on --mpi=pmix -N3 -n3 "$TRAIN" --steps 100000 --step-ms 10 > "$T/run.log" 2>&1 &
RUN_PID=$!
J=$(current_job)
expect_eq "predicted job id" "$J" "$NEXT"
node_scoutd_pid "$J" n1 > /dev/null
n=0; until on n1 test -S "$RUNDIR/$J/scoutd.n1.sock"; do n=$((n + 1)); [ $n -lt 100 ] || fail "no control socket on n1"; sleep 0.1; done
expect_eq "the job's directory on n1" "$(on n1 stat -c '%U %a' "$RUNDIR/$J")" "$JOB_USER 700"
expect_eq "her files in it" "$(on n1 find "$RUNDIR/$J" -user $NOBODY | wc -l)" 0
out=$(on n1 "$SCOUTCTL" status "$J" --json 2> "$T/status.err") || fail "root's status of the observed job: $(cat "$T/status.err")"
expect_eq "root reads the real scoutd (no fake)" "$(echo "$out" | jq -r .fake)" null
expect_eq "who answered" "$(echo "$out" | jq -r .node)" "1 of 1 answered"
grep -q "scout: $RUNDIR/$J was created by uid $NOBODY before this job" "$CL"/log/slurmd*.log ||
  fail "slurmd's log does not say her directory was taken back: $(grep -h 'scout:' "$CL"/log/slurmd*.log | tail -5)"
grep -q "moved aside to $RUNDIR/.scout-refused.$J.$NOBODY.[0-9a-f]\{16\}" "$CL"/log/slurmd*.log ||
  fail "her directory was not moved aside under a random name: $(grep -h 'scout:' "$CL"/log/slurmd*.log | tail -5)"
stop_fake

# --- 2. the running job's directory, re-made under it ---------------------------
# Once the training step's task runs on n1 (its rank observed): the control
# socket above is the companion step's, and the training step's slurmstepd
# makes the job's directory too when it starts; moved away before that, the
# name was made again by root under the other user's mkdir (CI, once).
n=0
until [ "$(on n1 sqlite3 -readonly "$SPOOL/$J/$J.db" "select count(*) from ranks where job_id='$J'" 2>/dev/null || echo 0)" -gt 0 ]; do
  n=$((n + 1)); [ $n -lt 200 ] || fail "the training step's rank on n1 was never observed"; sleep 0.1
done
# The job user may move her own directory (the sticky bit lets her); the
# other user then makes the name, 0700, hers, with the fake in it.
on n1 setpriv --reuid "$JOB_UID" --regid "$JOB_GID" --init-groups mv "$RUNDIR/$J" "$RUNDIR/$J.moved" ||
  fail "the job user could not move her directory"
on n1 setpriv --reuid $NOBODY --regid $NOBODY --clear-groups sh -c "mkdir -m 0700 $RUNDIR/$J && : > $RUNDIR/$J/asked" ||
  fail "could not re-make $RUNDIR/$J as uid $NOBODY"
fake_on n1 "$RUNDIR/$J/scoutd.n1.sock" "$RUNDIR/$J/asked"
out=$(on n1 setpriv --reuid $NOBODY --regid $NOBODY --clear-groups "$SCOUTCTL" status "$J" --json) ||
  fail "control: the fake in the re-made directory did not answer its own user"
expect_eq "control: the fake's status" "$(echo "$out" | jq -r .fake)" "all fine"
rc=0; on n1 "$SCOUTCTL" status "$J" --json > "$T/remade.out" 2> "$T/remade.err" || rc=$?
expect_eq "root's status through a re-made directory: exit" "$rc" 5
grep -q "answered by uid $NOBODY, which is neither root, you, nor the job's user (uid $JOB_UID); refused" "$T/remade.err" ||
  fail "root's scoutctl did not refuse the fake: $(cat "$T/remade.err") $(cat "$T/remade.out")"
stop_fake
on n1 rm -rf "$RUNDIR/$J"
on n1 mv "$RUNDIR/$J.moved" "$RUNDIR/$J"
on n1 "$SCOUTCTL" status "$J" --json > /dev/null 2> "$T/back.err" || fail "root's status once her directory is back: $(cat "$T/back.err")"

# --- 3. root has no /tmp default -------------------------------------------------
on n1 setpriv --reuid $NOBODY --regid $NOBODY --clear-groups sh -c \
  "mkdir -m 0700 -p /tmp/scout-0/$J && : > /tmp/scout-0/asked" || fail "could not plant /tmp/scout-0 on n1"
fake_on n1 "/tmp/scout-0/$J/scoutd.n1.sock" /tmp/scout-0/asked
out=$(on n1 env -u SCOUT_RUNTIME_DIR -u XDG_RUNTIME_DIR setpriv --reuid $NOBODY --regid $NOBODY --clear-groups \
  "$SCOUTCTL" status "$J" --runtime-dir /tmp/scout-0 --json) || fail "control: the fake at /tmp/scout-0 did not answer"
expect_eq "control: the fake's status" "$(echo "$out" | jq -r .fake)" "all fine"
on n1 sh -c ': > /tmp/scout-0/asked'
rc=0; on n1 env -u SCOUT_RUNTIME_DIR -u XDG_RUNTIME_DIR "$SCOUTCTL" status "$J" > "$T/nodir.out" 2> "$T/nodir.err" || rc=$?
expect_eq "root's status without a runtime directory: exit" "$rc" 2
grep -q "no runtime directory: expected --runtime-dir DIR, \$SCOUT_RUNTIME_DIR or \$XDG_RUNTIME_DIR" "$T/nodir.err" ||
  fail "root's scoutctl without a runtime directory: $(cat "$T/nodir.err")"
expect_eq "the fake was not asked" "$(on n1 sh -c 'wc -c < /tmp/scout-0/asked')" 0
rc=0; on n1 "$SCOUTCTL" status "$J" --runtime-dir /tmp/scout-0 > "$T/tmp0.out" 2> "$T/tmp0.err" || rc=$?
expect_eq "root's status at /tmp/scout-0 named: exit" "$rc" 5
grep -q "answered by uid $NOBODY, which is neither root, you, nor the job's user (uid $JOB_UID); refused" "$T/tmp0.err" ||
  fail "root's scoutctl did not refuse the fake at /tmp/scout-0: $(cat "$T/tmp0.err")"
stop_fake
on n1 rm -rf /tmp/scout-0
scancel "$J"
wait "$RUN_PID" 2>/dev/null || true
RUN_PID=

# --- 4. --scout-ckpt-dir, checked as her ---------------------------------------------
# _SLURM_SPANK_OPTION_scout_scout_ckpt_dir in her environment reaches
# slurmstepd's option callback (as root) without srun's own check.
mkdir -p "$SECRET/exists" && chmod 0700 "$SECRET"
mkdir -p "$CL.ckpt" && chown "$JOB_USER:" "$CL.ckpt"
# Control: her own directory is taken, without a word.
_SLURM_SPANK_OPTION_scout_scout_ckpt_dir=$CL.ckpt srun --scout=on -N1 -w n1 true > "$T/ck.own" 2>&1 ||
  fail "her own checkpoint directory: $(cat "$T/ck.own")"
if grep -q "scout-ckpt-dir" "$T/ck.own"; then fail "her own checkpoint directory was refused: $(cat "$T/ck.own")"; fi
# She is told (srun's output, or slurmd's log when Slurm keeps a step's
# message there), in the same words, with the same exit.
for p in exists missing; do
  rc=0; _SLURM_SPANK_OPTION_scout_scout_ckpt_dir=$SECRET/$p srun --scout=on -N1 -w n1 true > "$T/ck.$p" 2>&1 || rc=$?
  echo "$rc" > "$T/ck.$p.rc"
  msg="scout: option: --scout-ckpt-dir=$SECRET/$p is not valid; expected the absolute path of an existing directory, readable by you"
  grep -q "$msg" "$T/ck.$p" || grep -q "$msg" "$CL"/log/slurmd*.log || fail "--scout-ckpt-dir=$SECRET/$p: $(cat "$T/ck.$p")"
  # srun's word on waiting for the nodes depends on the epilogs still
  # running beside it, not on the path: left out of the comparison.
  grep -v -e 'queued and waiting for resources' -e 'has been allocated resources' "$T/ck.$p" |
    sed -e "s|$SECRET/$p|DIR|g" -e 's/[0-9][0-9]*/N/g' > "$T/ck.$p.seen"
done
expect_eq "exit for a path that exists and one that does not, neither hers to read" "$(cat "$T/ck.exists.rc")" "$(cat "$T/ck.missing.rc")"
cmp -s "$T/ck.exists.seen" "$T/ck.missing.seen" ||
  fail "what she sees differs: $(diff "$T/ck.exists.seen" "$T/ck.missing.seen" | head -10)"

# --- 5. long LD_PRELOAD values, kept -------------------------------------------------
LIBM=/lib/x86_64-linux-gnu/libm.so.6
# Control: a short one, the probe first (as 22 checks).
LD_PRELOAD=$LIBM srun --scout=on -N1 -w n1 sh -c 'printf "%s\n" "$LD_PRELOAD"' > "$T/pre.short" 2> "$T/pre.short.err" ||
  fail "short LD_PRELOAD: $(cat "$T/pre.short.err")"
expect_eq "short LD_PRELOAD" "$(cat "$T/pre.short")" "$PROBE:$LIBM"
for size in 5000 60000; do
  v=$LIBM
  while [ ${#v} -lt $size ]; do v="$v:$LIBM"; done
  LD_PRELOAD=$v srun --scout=on -N1 -w n1 sh -c 'printf "%s\n" "$LD_PRELOAD"' > "$T/pre.$size" 2> "$T/pre.$size.err" ||
    fail "LD_PRELOAD of ${#v} bytes: $(tail -3 "$T/pre.$size.err")"
  [ "$(cat "$T/pre.$size")" = "$PROBE:$v" ] ||
    fail "LD_PRELOAD of ${#v} bytes: the task got $(wc -c < "$T/pre.$size") bytes starting $(head -c 120 "$T/pre.$size")"
done
pass "runtime directory: planted and re-made directories, /tmp/scout-0 and fakes refused; ckpt-dir tells nothing; long LD_PRELOAD kept"
