# Helpers for the Slurm integration tests: a private three-node cluster
# (tests/cluster/cluster.sh) with scout.so in its plugstack and scout-epilog
# as its Epilog, everything under /var/tmp, removed on exit.
. "$top_srcdir/tests/integration/lib.sh"
CL=/var/tmp/scout-cluster.$$
SPOOL=$CL/spool-scout
SITE=$CL/site.db
RUNDIR=$CL/run
export SCOUT_LEDGER=$SITE SCOUT_SPOOL=$SPOOL SCOUT_RUNTIME_DIR=$RUNDIR
# The three "nodes" are one host whose slurmds have private /dev/shm, so Open
# MPI's processes of a step talk TCP to each other on this host; over eth0
# Open MPI 4.1's TCP BTL occasionally segfaults inside MPI_Init (seen in a
# scoutd companion: btl_tcp event handler, "connect() ... Operation now in
# progress"). Loopback is the interface such a one-host cluster has.
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
SCOUT_SO=$B/spank/.libs/scout.so

# On failure, also show what the cluster's jobs and scoutds wrote.
fail() {
  echo "FAIL: $*" >&2
  for f in "$T/run.log" "$CL/job.out" "$SPOOL"/*.log; do
    [ -f "$f" ] && { echo "--- $f" >&2; grep -v '^\[' "$f" | tail -25 >&2; }
  done
  exit 1
}

slurm_cleanup() {
  [ -n "${CL_ENV:-}" ] && . "$CL_ENV" && scancel --user=root >/dev/null 2>&1 || true
  sleep 0.5
  "$top_srcdir/tests/cluster/cluster.sh" stop "$CL" || true
  rm -rf "$CL.epilog" "$CL.prolog" "$CL.bin"
  cleanup
}
trap slurm_cleanup EXIT

# start_cluster [EXTRA PLUGSTACK ARGS...]
start_cluster() {
  mkdir -p "$CL"
  printf '#!/bin/sh\nexec %s/spank/scout-epilog --plugstack %s/plugstack.conf\n' "$B" "$CL" > "$CL.epilog"
  # The prolog runs scout-epilog by its installed name, scout-prolog.
  mkdir -p "$CL.bin" && ln -sf "$B/spank/scout-epilog" "$CL.bin/scout-prolog"
  printf '#!/bin/sh\nexec %s/scout-prolog --plugstack %s/plugstack.conf\n' "$CL.bin" "$CL" > "$CL.prolog"
  chmod +x "$CL.epilog" "$CL.prolog"
  line="required $SCOUT_SO scoutd=$B/scoutd/scoutd probe=$B/probe/.libs/libscout_probe.so spool=$SPOOL ledger=$SITE runtime_dir=$RUNDIR stall_threshold=2 companion_wait=20 $*"
  SCOUT_CLUSTER_EXTRA="Epilog=$CL.epilog
Prolog=$CL.prolog" SCOUT_CLUSTER_EXPOSE="$top_srcdir $top_builddir" \
    "$top_srcdir/tests/cluster/cluster.sh" start "$CL" "$line" || fail "cluster did not start: $(tail -20 "$CL"/log/*.log 2>/dev/null)"
  mkdir -p "$SPOOL" "$RUNDIR"; chmod 1777 "$SPOOL" "$RUNDIR"
  CL_ENV=$CL/env
  . "$CL_ENV"
}

# wait_job_verdict JOB KIND TIMEOUT : polls scoutctl query (spool, then site)
wait_job_verdict() {
  j=$1; kind=$2; limit=$3; n=0
  while [ "$n" -lt $((limit * 5)) ]; do
    c=$("$SCOUTCTL" query "$j" --json 2>/dev/null | jq --arg k "$kind" 'map(select(.kind == $k)) | length' 2>/dev/null || true)
    if [ -n "$c" ] && [ "$c" -gt 0 ]; then return 0; fi
    sleep 0.2; n=$((n + 1))
  done
  fail "no $kind verdict for job $j within ${limit}s: $("$SCOUTCTL" query "$j" 2>&1)"
}

# current_job : the id of the job running now
current_job() {
  n=0
  until j=$(squeue -h -o %i 2>/dev/null | head -1) && [ -n "$j" ]; do
    n=$((n + 1)); [ $n -lt 100 ] || fail "no job appeared in squeue"; sleep 0.1
  done
  echo "$j"
}

# node_state NODE : idle, drained, mixed, ...
node_state() { sinfo -h -n "$1" -o %T; }
node_reason() { sinfo -h -n "$1" -o %E; }

# wait_epilog JOB NODE : the epilog recorded its decision for NODE
wait_epilog() {
  n=0
  until [ "$(sqlite3 "$SITE" "select count(*) from gating where job_id='$1' and node='$2'" 2>/dev/null || echo 0)" -gt 0 ]; do
    n=$((n + 1)); [ $n -lt 150 ] || fail "no epilog decision for job $1 on $2"; sleep 0.2
  done
}
