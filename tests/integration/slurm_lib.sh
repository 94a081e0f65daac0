# Helpers for the Slurm integration tests: a private three-node cluster
# shaped like a site (tests/cluster/cluster.sh: node-local /var/spool/scout,
# /run/scout, /tmp, /dev/shm on every node; the tests run on the "login
# node", which sees none of them), scout.so in its plugstack, scout-epilog
# as its Epilog and scout-prolog as its Prolog, everything under /var/tmp,
# removed on exit. The site ledger ($SITE) is on the head until the ledger
# service exists.
. "$top_srcdir/tests/integration/lib.sh"
CL=/var/tmp/scout-cluster.$$
SPOOL=/var/spool/scout  # node-local on every node
SITE=$CL/site.db
RUNDIR=/run/scout       # node-local on every node
export SCOUT_LEDGER=$SITE SCOUT_SPOOL=$SPOOL SCOUT_RUNTIME_DIR=$RUNDIR

# on NODE CMD... : run CMD on compute node NODE (its node-local files).
on() { "$top_srcdir/tests/cluster/cluster.sh" on "$CL" "$@"; }
# The three "nodes" are one host whose slurmds have private /dev/shm, so Open
# MPI's processes of a step talk TCP to each other on this host; over eth0
# Open MPI 4.1's TCP BTL occasionally fails inside MPI_Init ("connect() ...
# Operation now in progress"). Loopback is the interface such a one-host
# cluster has; the companion's scoutds keep these settings (OMPI_MCA_btl*,
# _oob*, _pml*, _mtl* reach them), as a site's network settings would.
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
SCOUT_SO=$B/spank/.libs/scout.so

# Jobs are submitted by an ordinary user, as at every site (root only
# administers: the epilog, scoutctl clear, scancel). JOB_USER is made here
# once; srun, sbatch and salloc on this login node are wrappers in
# $CL.bin/user that run the real ones as JOB_USER (from /tmp, with her own
# home), and exec the real one for any caller but root (inside her batch
# script, or another test user's). Each wrapper execs, so $! of `srun ... &` is srun itself.
JOB_USER=scout-user
id -u "$JOB_USER" >/dev/null 2>&1 || useradd -M -d /nonexistent -s /usr/sbin/nologin "$JOB_USER" 2>/dev/null ||
  id -u "$JOB_USER" >/dev/null 2>&1 || { echo "FAIL: cannot make the job user $JOB_USER" >&2; exit 1; }
JOB_UID=$(id -u "$JOB_USER") JOB_GID=$(id -g "$JOB_USER")
# as_job_user CMD... : CMD as the job's user (her scoutctl on the login node)
as_job_user() { (cd /tmp && HOME=$CL.home USER=$JOB_USER LOGNAME=$JOB_USER setpriv --reuid "$JOB_UID" --regid "$JOB_GID" --init-groups "$@"); }

# On failure, also show what the cluster's jobs and scoutds wrote.
fail() {
  echo "FAIL: $*" >&2
  for f in "$T/run.log" "$CL/job.out"; do
    [ -f "$f" ] && { echo "--- $f" >&2; grep -v '^\[' "$f" | grep -v '^step ' | tail -25 >&2; }
  done
  # Each scoutd's log is on its node, in the newest job's spool directory.
  for n in n1 n2 n3; do
    on "$n" sh -c "d=\$(ls -td $SPOOL/[0-9]*/ 2>/dev/null | head -1); [ -n \"\$d\" ] && { ls -la \$d; for f in \$d*.scoutd.log; do echo \"--- $n:\$f\"; tail -25 \"\$f\"; done; }" >&2 2>/dev/null || true
  done
  # What slurmd says of steps, prologs, epilogs and scout (times included):
  # where a slow start or a refused step shows.
  for f in "$CL"/log/slurmd*.log; do
    [ -f "$f" ] && { echo "--- $f" >&2; grep -i -e scout -e prolog -e epilog -e error -e 'launch' "$f" | tail -20 >&2; }
  done
  # srun's messages about its companions (the user's runtime directory).
  for f in /run/user/*/scout.*.companion.log; do
    [ -f "$f" ] && [ "$f" -nt "$CL/slurm.conf" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }
  done
  # What the site ledger holds of the newest jobs: an extra verdict or a
  # decision that was not expected shows here.
  if [ -f "${SITE:-}" ]; then
    echo "--- site ledger: newest verdicts, newest gating decisions" >&2
    sqlite3 "$SITE" "select job_id,kind,status,ranks,hosts,origin from verdicts order by id desc limit 8" >&2 2>/dev/null || true
    sqlite3 "$SITE" "select job_id,node,decision,substr(reason,1,160) from gating order by rowid desc limit 8" >&2 2>/dev/null || true
  fi
  # The reason once more, last: the dump above can push it out of view.
  echo "FAIL: $*" >&2
  exit 1
}

slurm_cleanup() {
  stop_ledgerd KILL
  # Any scout-ledgerd of this cluster (one started in a subshell, say).
  pkill -KILL -f -- "scout-ledgerd --config $CL/scout.conf" 2>/dev/null || true
  if [ -n "${CL_ENV:-}" ] && . "$CL_ENV"; then
    scancel --partition=debug >/dev/null 2>&1 || true  # every user's job of this cluster
  fi
  sleep 0.5
  # Her processes of this cluster only (tests beside this one run jobs as
  # her too): those whose environment names this cluster's slurm.conf.
  for p in $(pgrep -u "$JOB_USER" 2>/dev/null); do
    grep -qz "^SLURM_CONF=$CL/slurm.conf\$" "/proc/$p/environ" 2>/dev/null && kill -KILL "$p" 2>/dev/null || true
  done
  "$top_srcdir/tests/cluster/cluster.sh" stop "$CL" || true
  rm -rf "$CL.epilog" "$CL.prolog" "$CL.bin" "$CL.home"
  # The login node's spool stays root's 0755, as a package leaves it: a test
  # beside this one may be using it, so it is neither removed nor re-moded.
  cleanup
}
trap slurm_cleanup EXIT

# start_cluster [EXTRA PLUGSTACK ARGS...]
# SLURM_CONF_EXTRA: more slurm.conf lines (e.g. RebootProgram=/bin/true).
# With LEDGERD=yes the head also runs scout-ledgerd (start_ledgerd) and every
# program of the cluster reads the site configuration $CL/scout.conf.
start_cluster() {
  mkdir -p "$CL"
  conf=
  if [ "${LEDGERD:-no}" = yes ]; then
    export SCOUT_CONF=$CL/scout.conf  # written once the cluster started (start clears $CL)
    conf="SCOUT_CONF=$CL/scout.conf "
  fi
  # EPILOG_ENV: assignments for the epilog's environment (tests: the NVML stand-in).
  printf '#!/bin/sh\n%s%sexec %s/spank/scout-epilog --plugstack %s/plugstack.conf\n' "$conf" "${EPILOG_ENV:-}" "$B" "$CL" > "$CL.epilog"
  # The prolog runs scout-epilog by its installed name, scout-prolog.
  mkdir -p "$CL.bin" && ln -sf "$B/spank/scout-epilog" "$CL.bin/scout-prolog"
  printf '#!/bin/sh\n%sexec %s/scout-prolog --plugstack %s/plugstack.conf\n' "$conf" "$CL.bin" "$CL" > "$CL.prolog"
  chmod +x "$CL.epilog" "$CL.prolog"
  mkdir -p /var/spool/scout && chown root:root /var/spool/scout && chmod 0755 /var/spool/scout
  mkdir -p "$CL.bin/user" "$CL.home" && chown "$JOB_USER:" "$CL.home" && chmod 0700 "$CL.home"
  for c in srun sbatch salloc; do
    [ -x "$CL.bin/user/$c" ] && continue  # a second start_cluster in one test
    real=$(command -v "$c") || fail "no $c"
    printf '#!/bin/sh\n[ "$(id -u)" != 0 ] && exec %s "$@"\ncd /tmp && HOME=%s USER=%s LOGNAME=%s exec setpriv --reuid %s --regid %s --init-groups %s "$@"\n' \
      "$real" "$CL.home" "$JOB_USER" "$JOB_USER" "$JOB_UID" "$JOB_GID" "$real" > "$CL.bin/user/$c"
    chmod 0755 "$CL.bin/user/$c"
  done
  case ":$PATH:" in *":$CL.bin/user:"*) ;; *) export PATH="$CL.bin/user:$PATH" ;; esac
  line="required $SCOUT_SO scoutd=$B/scoutd/scoutd probe=$B/probe/.libs/libscout_probe.so spool=$SPOOL ledger=$SITE runtime_dir=$RUNDIR stall_threshold=2 companion_wait=20 blame_jobs=1 blame_users=1 dstate_wait=0.5 $*"
  SCOUT_CLUSTER_OWNER=$$ SCOUT_CLUSTER_EXTRA="Epilog=$CL.epilog
Prolog=$CL.prolog
${SLURM_CONF_EXTRA:-}" SCOUT_CLUSTER_EXPOSE="$top_srcdir $top_builddir" \
    "$top_srcdir/tests/cluster/cluster.sh" start "$CL" "$line" || fail "cluster did not start: $(tail -20 "$CL"/log/*.log 2>/dev/null)"
  CL_ENV=$CL/env
  . "$CL_ENV"
  # Her batch jobs' output file (slurmstepd opens it as her; $CL is root's).
  : > "$CL/job.out" && chown "$JOB_USER:" "$CL/job.out"
  if [ "${LEDGERD:-no}" = yes ]; then
    LEDGERD_PORT=$(( $(cat "$CL/port_base") + 10 ))  # the cluster's own block (cluster.sh)
    METRICS_PORT=$((LEDGERD_PORT + 1))
    printf 'ledgerd = 127.0.0.1:%s\nsite_ledger = %s\nadmins = root\nmetrics_listen = 127.0.0.1:%s\n' \
      "$LEDGERD_PORT" "$CL/ledgerd.db" "$METRICS_PORT" > "$CL/scout.conf"
    start_ledgerd
  fi
}

# start_ledgerd [OPTIONS] / stop_ledgerd [SIGNAL] : scout-ledgerd on the head
start_ledgerd() {
  "$B/ledgerd/scout-ledgerd" --config "$CL/scout.conf" "$@" >> "$CL/ledgerd.log" 2>&1 &
  LEDGERD_PID=$!
  n=0
  until "$SCOUTCTL" ping >/dev/null 2>&1; do
    n=$((n + 1)); [ $n -lt 100 ] || fail "scout-ledgerd did not come up: $(tail -5 "$CL/ledgerd.log")"; sleep 0.1
  done
}
stop_ledgerd() {
  [ -n "${LEDGERD_PID:-}" ] || return 0
  kill "-${1:-TERM}" "$LEDGERD_PID" 2>/dev/null || true
  wait "$LEDGERD_PID" 2>/dev/null || true
  LEDGERD_PID=
}

# query_on NODE JOB [ARGS...] : scoutctl query on NODE (its spool, then the site)
query_on() { node=$1; shift; on "$node" "$SCOUTCTL" query "$@"; }

# wait_job_verdict JOB KIND TIMEOUT [NODE] : polls scoutctl query on NODE
# (default n1; every node's spool holds the job's verdicts)
wait_job_verdict() {
  j=$1; kind=$2; limit=$3; node=${4:-n1}; n=0
  while [ "$n" -lt $((limit * 5)) ]; do
    c=$(query_on "$node" "$j" --json 2>/dev/null | jq --arg k "$kind" 'map(select(.kind == $k)) | length' 2>/dev/null || true)
    if [ -n "$c" ] && [ "$c" -gt 0 ]; then return 0; fi
    sleep 0.2; n=$((n + 1))
  done
  fail "no $kind verdict for job $j within ${limit}s on $node: $(query_on "$node" "$j" 2>&1)"
}

# node_scoutd_pid JOB NODE : the pid of NODE's scoutd, once it registered in
# NODE's own spool ledger (20 s at most). Read-only: root's sqlite3 would
# otherwise create the ledger, root's, before her scoutd does.
node_scoutd_pid() {
  n=0
  until p=$(on "$2" sqlite3 -readonly "$SPOOL/$1/$1.db" "select scoutd_pid from nodes where job_id='$1' and node='$2'" 2>/dev/null) && [ -n "$p" ]; do
    n=$((n + 1)); [ $n -lt 200 ] || fail "$2's scoutd never registered"; sleep 0.1
  done
  echo "$p"
}

# wait_job_end JOB : the job left the queue (120 s at most)
wait_job_end() {
  n=0
  until [ -z "$(squeue -h -j "$1" 2>/dev/null)" ]; do
    n=$((n + 1)); [ $n -lt 600 ] || fail "job $1 did not end"; sleep 0.2
  done
}

# current_job : the newest job that is pending or running (a job of an earlier
# step that is still completing, its epilog running, is not the current one)
current_job() {
  n=0
  until j=$(squeue -h -t PD,CF,R -o %i --sort=-i 2>/dev/null | head -1) && [ -n "$j" ]; do
    n=$((n + 1)); [ $n -lt 100 ] || fail "no job appeared in squeue"; sleep 0.1
  done
  echo "$j"
}

# node_state NODE : idle, drained, mixed, ...
# node_state NODE: its state once no epilog runs there. The epilog records
# its decision before it exits and slurmd reports the end of the job, so
# right after wait_epilog sinfo may still say completing (or draining, for a
# node it drains): those are waited out (60 s), never asserted.
node_state() {
  n=0
  while :; do
    st=$(sinfo -h -n "$1" -o %T)
    case "$st" in *completing*|draining) ;; *) echo "$st"; return ;; esac
    n=$((n + 1)); [ $n -lt 300 ] || { echo "$st"; return; }; sleep 0.2
  done
}
node_reason() { sinfo -h -n "$1" -o %E; }

# wait_epilog JOB NODE : the epilog recorded its decision for NODE (60 s: a
# loaded host delays the end of a job by the companion's grace and KillWait)
wait_epilog() {
  n=0
  until [ "$(sqlite3 "$SITE" "select count(*) from gating where job_id='$1' and node='$2'" 2>/dev/null || echo 0)" -gt 0 ]; do
    n=$((n + 1)); [ $n -lt 300 ] || fail "no epilog decision for job $1 on $2 in 60 s; site rows: $(sqlite3 "$SITE" "select job_id,node,decision,reason from gating where job_id='$1'" 2>&1); slurmd: $(grep -i -e epilog -e prolog "$CL/log/slurmd.$2.log" 2>/dev/null | tail -5)"; sleep 0.2
  done
}
