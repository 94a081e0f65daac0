# Shared helpers for the integration tests: real mpirun, real scoutds, a
# real SQLite ledger in a private temporary directory, cleaned up on exit.
# Each test sources this file; automake sets top_builddir and top_srcdir.
set -eu
: "${top_builddir:?}" "${top_srcdir:?}"
B=$top_builddir
# Ledgers are read while scoutds, epilogs and scout-ledgerd write them: every
# sqlite3 in the tests waits for a lock instead of failing "database is locked".
sqlite3() { command sqlite3 -cmd ".timeout 10000" "$@"; }
SCOUT_RUN=$B/cli/scout-run
SCOUTCTL=$B/cli/scoutctl
TRAIN=$B/examples/mpi_train
T=$(mktemp -d /tmp/scout-it.XXXXXX)
LEDGER=$T/ledger.db
export SCOUT_LEDGER=$LEDGER SCOUT_RUNTIME_DIR=$T/run
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RUN_PID=
# Job ids: a block of 100 per test process (next_job steps inside it), above
# any pid and any local job id scout-run reserves (1000000 on): tests running
# side by side never share one, and so never a /dev/shm record name.
JOB=$(( 10000000 + $$ * 100 ))

cleanup() {
  if [ -n "$RUN_PID" ] && kill -0 "$RUN_PID" 2>/dev/null; then
    kill -INT "$RUN_PID" 2>/dev/null || true; sleep 1
    kill -INT "$RUN_PID" 2>/dev/null || true
    wait "$RUN_PID" 2>/dev/null || true
  fi
  rm -rf "$T"
}
trap cleanup EXIT

# fail MESSAGE: the message, the run log's last 40 lines (less the training's
# step lines), and the message again last (a CI excerpt keeps a log's tail)
fail() {
  echo "FAIL: $*" >&2
  if [ -f "$T/run.log" ]; then
    echo "--- run log" >&2
    grep -v '^\[' "$T/run.log" | grep -Ev '^step [0-9]+ loss ' | tail -40 >&2
    # The verdicts with their evidence (which rule named whom, and why).
    echo "--- verdicts of job $JOB" >&2
    "$B/cli/scoutctl" query "$JOB" --json 2>/dev/null | head -c 6000 >&2 || true
    echo >&2
    # SCOUT_KEEP_LOG=FILE keeps the whole run log (a debug run's reasons).
    [ -z "${SCOUT_KEEP_LOG:-}" ] || cp "$T/run.log" "$SCOUT_KEEP_LOG" || true
    echo "FAIL: $*" >&2
  fi
  exit 1
}
pass() { echo "PASS: $*"; }

# start_run ARGS... : scout-run in the background, output in $T/run.log
start_run() {
  "$SCOUT_RUN" --job-id "$JOB" "$@" > "$T/run.log" 2>&1 &
  RUN_PID=$!
}

# finish_run: wait for scout-run, sets RUN_RC
finish_run() {
  RUN_RC=0
  wait "$RUN_PID" || RUN_RC=$?
  RUN_PID=
}

verdicts_json() { "$SCOUTCTL" query "$JOB" --json; }

# wait_for_verdict KIND TIMEOUT_S : polls the ledger through scoutctl
wait_for_verdict() {
  kind=$1; limit=$2; n=0
  while [ "$n" -lt $((limit * 5)) ]; do
    # jq 1.6 -e succeeds on empty input: test the count explicitly
    c=$(verdicts_json 2>/dev/null | jq --arg k "$kind" 'map(select(.kind == $k)) | length' 2>/dev/null || true)
    if [ -n "$c" ] && [ "$c" -gt 0 ]; then return 0; fi
    sleep 0.2; n=$((n + 1))
  done
  fail "no $kind verdict for job $JOB within ${limit}s: $(verdicts_json 2>&1)"
}

# rank_pid RANK : pid of a training rank, from the ledger's ranks table
rank_pid() {
  sqlite3 "$LEDGER" "select pid from ranks where job_id='$JOB' and rank=$1"
}

# scoutd_pid DB JOB NODE : the pid of NODE's scoutd, once it registered in
# the ledger DB (20 s at most)
scoutd_pid() {
  n=0
  until p=$(sqlite3 "$1" "select scoutd_pid from nodes where job_id='$2' and node='$3'" 2>/dev/null) && [ -n "$p" ]; do
    n=$((n + 1)); [ $n -lt 200 ] || fail "$3's scoutd never registered"; sleep 0.1
  done
  echo "$p"
}

# assert_no_leftovers : no shm record, socket dir or process of this job
assert_no_leftovers() {
  if ls /dev/shm 2>/dev/null | grep -q "^scout\.$JOB\."; then fail "shm records left: $(ls /dev/shm | grep "^scout\.$JOB\.")"; fi
  [ ! -e "$SCOUT_RUNTIME_DIR/$JOB" ] || fail "runtime dir left: $SCOUT_RUNTIME_DIR/$JOB"
  if pgrep -f -- "--job-id $JOB " >/dev/null; then fail "scoutd processes left: $(pgrep -af -- "--job-id $JOB ")"; fi
}

# expect_eq WHAT ACTUAL EXPECTED
expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"; }
# expect_no_verdicts LABEL : the job has no verdict; otherwise fails with
# each verdict's rule and numbers and the machine's load (a healthy run named
# is a cause to find, and the failure must carry what to find it from)
expect_no_verdicts() {
  v=$(verdicts_json)
  [ "$(echo "$v" | jq length)" = 0 ] && return 0
  fail "$1: expected no verdict, got $(echo "$v" | jq -c '[.[] | {kind, ranks, source: .evidence.source,
    evidence: (.evidence | with_entries(select(.value | type == "number" or type == "string")))}]');
    load: $(cat /proc/loadavg)"
}
# expect_error RC PATTERN CMD... : exit status RC and stderr matching PATTERN
expect_error() {
  want=$1; pat=$2; shift 2
  rc=0; "$@" > "$T/out" 2> "$T/err" || rc=$?
  [ "$rc" = "$want" ] || fail "$*: exit $rc, expected $want; stderr: $(cat "$T/err")"
  grep -Eq -- "$pat" "$T/err" || fail "$*: stderr does not match '$pat': $(cat "$T/err")"
}

# next_job : a new job id for the next run of the same test
next_job() { JOB=$((JOB + 1)); }

# wait_rank_state RANK LETTER : until the rank's process shows that state
wait_rank_state() {
  n=0
  while :; do
    pid=$(rank_pid "$1" 2>/dev/null || true)
    if [ -n "$pid" ] && [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = "$2" ]; then return 0; fi
    n=$((n + 1)); [ $n -lt 400 ] || fail "rank $1 never reached state $2"
    sleep 0.05
  done
}

# expect_verdict KIND RANKS HOSTS : exactly one verdict of the job, with these
# (RANKS and HOSTS as compact JSON)
expect_verdict() {
  v=$(verdicts_json)
  expect_eq "job $JOB: verdicts" "$(echo "$v" | jq -c '[.[] | .kind]')" "[\"$1\"]"
  expect_eq "job $JOB: $1 status" "$(echo "$v" | jq -r '.[0].status')" attributed
  expect_eq "job $JOB: $1 ranks" "$(echo "$v" | jq -c '.[0].ranks')" "$2"
  expect_eq "job $JOB: $1 hosts" "$(echo "$v" | jq -c '.[0].hosts')" "$3"
}

# stop_run : ends a job left running on purpose (its ranks continued first)
stop_run() {
  for p in $(sqlite3 "$LEDGER" "select pid from ranks where job_id='$JOB'"); do kill -CONT "$p" 2>/dev/null || true; done
  kill -INT "$RUN_PID" 2>/dev/null || true; sleep 1; kill -INT "$RUN_PID" 2>/dev/null || true
  wait "$RUN_PID" 2>/dev/null || true
  RUN_PID=
}

# use_nccl_standin : NTRAIN (the NCCL example) and the stand-in CUDA, NCCL and
# NVML libraries (SCOUT_STANDIN_NVML = an empty $T/nvml.txt, values written
# into it at run time); skips the test when built without NCCL.
use_nccl_standin() {
  NTRAIN=$B/examples/nccl_train
  [ -x "$NTRAIN" ] && [ -f "$B/probe/.libs/libscout_nccl.so" ] || { echo "SKIP: built without NCCL"; exit 77; }
  export LD_LIBRARY_PATH=$B/tests/standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export SCOUT_STANDIN_NVML=$T/nvml.txt
  : > "$SCOUT_STANDIN_NVML"
  # The stand-in NCCL's segments in this test's directory (removed with it),
  # never in /dev/shm where a test beside this one has its own.
  export SCOUT_STANDIN_NCCL_DIR=$T/nccl-segments
  mkdir -p "$SCOUT_STANDIN_NCCL_DIR"
}
