#!/bin/sh
# A Slurm cluster shaped like a site, on this one host, for scout's tests and
# demo. The head is this host's namespace: munged and slurmctld (and the site
# ledger, $DIR/site.db, until the ledger service exists). Three compute nodes
# n1..n3 are `slurmd -N nX`, each in its own mount namespace with node-local
# disks: private /tmp (PMIx app dirs), /dev/shm (Open MPI and scout records),
# /var/spool/scout, /var/lib/scout and /run/scout (SCOUT_CLUSTER_PRIVATE
# overrides that list). The login node is where the tests run (this host's
# namespace, no slurmd): it sees none of the nodes' private files, as on a
# real cluster; `cluster.sh on DIR NODE CMD...` runs a command on a node (an
# administrator's ssh).
# Everything lives under DIR (which must be outside /tmp) and is owned by the
# test run that started it. Paths listed in SCOUT_CLUSTER_EXPOSE (the source
# and build trees) that lie under /tmp are bind-mounted into each node's
# private /tmp, so binaries there stay visible to the nodes.
#   cluster.sh start DIR [PLUGSTACK_LINE]   start; writes DIR/env (SLURM_CONF)
#   cluster.sh stop DIR                     stop and remove what it started
#   cluster.sh on DIR NODE CMD [ARGS...]    run CMD in NODE's mount namespace
#   cluster.sh munge DIR                    munged running (started if need be)
#   cluster.sh ports DIR                    take a free block of 20 ports for
#                                           DIR (prints its base; stop gives it back)
# Clusters run side by side (make check runs tests in parallel): each start
# takes its own block of 20 ports (slurmctld at the base, slurmds at base+1..3,
# the test's scout-ledgerd at base+10 and its metrics at base+11) unless
# SCOUT_CLUSTER_PORT_BASE names one. A block is held by a lock directory
# under /var/tmp/scout-ports naming its cluster and owner; a block whose owner
# died without stopping its cluster (a test killed by a timeout) is taken
# back: its cluster is stopped first, so no daemon of a dead run holds a port.
set -eu
cmd=${1:?usage: cluster.sh start|stop DIR}
DIR=${2:?usage: cluster.sh start|stop DIR}
NODES="n1 n2 n3"
PRIVATE=${SCOUT_CLUSTER_PRIVATE:-/var/spool/scout /var/lib/scout /run/scout}
HOST=$(hostname)
PORTS=/var/tmp/scout-ports

# port_busy BASE: some port of BASE..BASE+19 is bound (TCP, IPv4 or IPv6).
port_busy() {
  for f in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$f" ] || continue
    awk -v lo="$1" -v hi="$(($1 + 19))" 'NR > 1 { split($2, a, ":"); p = 0; h = a[length(a)];
      for (i = 1; i <= length(h); i++) p = p * 16 + index("0123456789ABCDEF", substr(h, i, 1)) - 1;
      if (p >= lo && p <= hi) found = 1 } END { exit !found }' "$f" && return 0
  done
  return 1
}

# take_ports: a free block for DIR; its base in DIR/port_base and on stdout.
# The owner is the process that will stop the cluster (SCOUT_CLUSTER_OWNER,
# default the caller of cluster.sh): while it lives, in this boot, the block
# is its own. One lock ($PORTS/.lock) covers every take and give, the
# stopping of a dead owner's cluster included, so two tests never both
# reclaim one block.
take_ports() {
  mkdir -p "$PORTS"
  owner=${SCOUT_CLUSTER_OWNER:-$PPID}
  boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
  exec 7>>"$PORTS/.lock"
  flock -w 120 7 || { echo "cluster: $PORTS/.lock held for 2 min" >&2; return 1; }
  PORTS_LOCKED=1
  i=0
  while [ $i -lt 64 ]; do
    base=$((17100 + i * 20)); lock=$PORTS/$base; i=$((i + 1))
    if [ -d "$lock" ]; then
      o=$(cat "$lock/owner" 2>/dev/null || true); d=$(cat "$lock/dir" 2>/dev/null || true)
      b=$(cat "$lock/boot" 2>/dev/null || true)
      if [ "$b" = "$boot" ] && [ -n "$o" ] && kill -0 "$o" 2>/dev/null; then continue; fi
      # Its owner is gone: in this boot, stop what it left (its pids are
      # this boot's); from an earlier boot nothing of it runs.
      if [ "$b" = "$boot" ] && [ -n "$d" ] && [ "$d" != "$DIR" ] && [ -f "$d/slurm.conf" ]; then
        (DIR=$d; stop) >/dev/null 2>&1 || true
      fi
      rm -rf "$lock"
    fi
    if port_busy "$base"; then continue; fi
    mkdir "$lock" && echo "$DIR" > "$lock/dir" && echo "$owner" > "$lock/owner" && echo "$boot" > "$lock/boot"
    mkdir -p "$DIR"; echo "$base" > "$DIR/port_base"
    flock -u 7; exec 7>&-
    echo "$base"; return 0
  done
  flock -u 7; exec 7>&-
  echo "cluster: no free block of 20 ports in 17100-18379 (see $PORTS)" >&2
  return 1
}

give_ports() {
  b=$(cat "$DIR/port_base" 2>/dev/null) || return 0
  [ -d "$PORTS/$b" ] || return 0
  if [ -z "${PORTS_LOCKED:-}" ]; then exec 7>>"$PORTS/.lock"; flock -w 120 7 || true; fi
  if [ "$(cat "$PORTS/$b/dir" 2>/dev/null)" = "$DIR" ]; then rm -rf "$PORTS/$b"; fi
  if [ -z "${PORTS_LOCKED:-}" ]; then flock -u 7 || true; exec 7>&-; fi
  return 0
}

# kill_tree PID: the process and all its descendants (slurmd leaves its
# slurmstepds, and they their tasks, behind otherwise).
kill_tree() {
  for c in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done
  kill -9 "$1" 2>/dev/null || true
}

stop() {
  [ -d "$DIR" ] || return 0
  # Every process in a node's mount namespace is that node's: its slurmd,
  # the slurmstepds it forked (not its descendants once they detach), their
  # tasks and scoutds. Never the host's own namespace.
  host_ns=$(readlink /proc/self/ns/mnt)
  for f in "$DIR"/pids/slurmd.*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    # A pid file of a cluster long gone may name a reused pid: only a slurmd
    # of this cluster's configuration is this cluster's.
    tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "-f $DIR/slurm.conf" || continue
    ns=$(readlink "/proc/$pid/ns/mnt" 2>/dev/null) || continue
    if [ "$ns" = "$host_ns" ]; then kill_tree "$pid"; continue; fi
    for p in /proc/[0-9]*; do
      [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] && { kill -9 "${p#/proc/}" 2>/dev/null || true; }
    done
  done
  # Job processes of this cluster that outlived their slurmstepd (the
  # caller's own shell has SLURM_CONF too, but no SLURM_JOB_ID).
  for p in $(grep -l "SLURM_CONF=$DIR/slurm.conf" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
    grep -q "SLURM_JOB_ID=" "/proc/$p/environ" 2>/dev/null && kill -9 "$p" 2>/dev/null || true
  done
  # slurmctld (and any slurmd left): only while its command line names this
  # cluster's configuration (a pid file may outlive its process).
  ours() { { tr '\0' ' ' < "/proc/$1/cmdline"; } 2>/dev/null | grep -q -- "-f $DIR/slurm.conf"; }
  for f in "$DIR"/pids/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f"); if ours "$pid"; then kill "$pid" 2>/dev/null || true; fi
  done
  sleep 1
  for f in "$DIR"/pids/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f"); if ours "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
  done
  give_ports
  rm -rf "$DIR"
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  t=$1; what=$2; shift 2; n=0
  until "$@" >/dev/null 2>&1; do
    n=$((n + 1)); [ $n -lt $((t * 10)) ] || { echo "cluster: $what did not come up; see $DIR/log" >&2; return 1; }
    sleep 0.1
  done
}

# munge_up: a running munged (reused, else started). It is the host's
# service, shared by every cluster and test running beside this one: started
# once, under a lock, and never stopped by a cluster or a test.
munge_up() {
  exec 9> /var/tmp/scout-munged.lock
  flock -w 60 9 || { echo "cluster: /var/tmp/scout-munged.lock held for a minute" >&2; exit 1; }
  if ! munge -n </dev/null >/dev/null 2>&1; then
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
    [ -s /etc/munge/munge.key ] || { mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 600 /etc/munge/munge.key; }
    runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid 9>&-
    wait_for 10 munged sh -c 'munge -n </dev/null' || { flock -u 9; exit 1; }
  fi
  flock -u 9; exec 9>&-
}

start() {
  case "$DIR" in /tmp|/tmp/*) echo "cluster: $DIR is under /tmp, which each node replaces; use /var/tmp" >&2; exit 2 ;; esac
  stop
  if [ -n "${SCOUT_CLUSTER_PORT_BASE:-}" ]; then PORT_BASE=$SCOUT_CLUSTER_PORT_BASE
    mkdir -p "$DIR"; echo "$PORT_BASE" > "$DIR/port_base"
  else PORT_BASE=$(take_ports) || exit 1
  fi
  mkdir -p "$DIR/pids" "$DIR/log" "$DIR/state" "$DIR/spool"
  munge_up
  CONF=$DIR/slurm.conf
  cat > "$CONF" <<CONF
ClusterName=scout
# Job ids unique across cluster restarts: Open MPI names its shared-memory
# segments after the job, and a stale segment of an earlier "job 1" breaks
# the next one.
FirstJobId=$(( ($(date +%s) % 100000) * 100 + 1000 ))
SlurmctldHost=$HOST
SlurmctldPort=$PORT_BASE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/pids/slurmctld.pid
SlurmdPidFile=$DIR/pids/slurmd.%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
PlugStackConfig=$DIR/plugstack.conf
KillWait=5
InactiveLimit=0
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=60
${SCOUT_CLUSTER_EXTRA:-}
NodeName=n1 NodeHostname=$HOST Port=$((PORT_BASE + 1)) CPUs=2 State=UNKNOWN
NodeName=n2 NodeHostname=$HOST Port=$((PORT_BASE + 2)) CPUs=2 State=UNKNOWN
NodeName=n3 NodeHostname=$HOST Port=$((PORT_BASE + 3)) CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=n1,n2,n3 Default=YES MaxTime=INFINITE State=UP
CONF
  printf '%s\n' "${3:-}" > "$DIR/plugstack.conf"
  echo "SLURM_CONF=$CONF; export SLURM_CONF" > "$DIR/env"
  slurmctld -f "$CONF" -i
  wait_for 20 slurmctld env SLURM_CONF="$CONF" scontrol ping
  mkdir -p "$DIR/host-tmp"
  for n in $NODES; do
    mkdir -p "$DIR/tmp-$n" "$DIR/spool/$n"
    chmod 1777 "$DIR/tmp-$n"
    expose=""
    for p in ${SCOUT_CLUSTER_EXPOSE:-}; do
      case "$p" in
        /tmp/*) rel=${p#/tmp/}; mkdir -p "$DIR/tmp-$n/$rel"
                expose="$expose && mount --bind '$DIR/host-tmp/$rel' '/tmp/$rel'" ;;
      esac
    done
    # Node-local disks: each listed directory is the node's own.
    private=""
    for p in $PRIVATE; do
      mkdir -p "$p" "$DIR/node-$n$p"
      case "$p" in  # written by jobs' scoutds (as the user), as a site makes them
        /var/spool/scout|/run/scout) chmod 1777 "$DIR/node-$n$p" ;;
        *) chmod 0755 "$DIR/node-$n$p" ;;
      esac
      private="$private && mount --bind '$DIR/node-$n$p' '$p'"
    done
    unshare -m --propagation private sh -c \
      "mount --bind /tmp '$DIR/host-tmp' && mount --bind '$DIR/tmp-$n' /tmp $expose && mount -t tmpfs -o size=1g,mode=1777 tmpfs /dev/shm $private && exec slurmd -f '$CONF' -N $n" \
      >> "$DIR/log/slurmd-start.log" 2>&1
  done
  wait_for 30 "three idle nodes" sh -c "SLURM_CONF='$CONF' sinfo -h -o '%t %D' | grep -q '^idle 3$'"
}

# on NODE CMD...: as an administrator logged in on NODE (its mount namespace).
on() {
  node=${1:?usage: cluster.sh on DIR NODE CMD [ARGS...]}; shift
  pid=$(cat "$DIR/pids/slurmd.$node.pid" 2>/dev/null) || { echo "cluster: no slurmd for $node in $DIR" >&2; exit 2; }
  exec nsenter -t "$pid" -m -- "$@"
}

case "$cmd" in
  start) start "$@" ;;
  stop) stop ;;
  on) shift 2; on "$@" ;;
  ports) take_ports ;;
  munge) munge_up ;;
  *) echo "usage: cluster.sh start|stop|on DIR [PLUGSTACK_LINE | NODE CMD...]" >&2; exit 2 ;;
esac
