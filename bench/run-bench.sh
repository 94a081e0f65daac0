#!/bin/sh
# make bench: every benchmark prints a table with a baseline measured in the
# same run. Numbers are for this machine; they are not asserted anywhere.
set -eu
B=${top_builddir:?}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "== signature throughput vs memcpy (one core)"
"$B/bench/signature_bench"
echo
echo "== probe cost (MPI_Allreduce on MPI_COMM_SELF), with collective-output signatures"
for cfg in "2000000 1 0" "2000000 1 64" "2000000 1 1" "2000 131072 0" "2000 131072 64" "2000 131072 1"; do
  set -- $cfg
  SCOUT_OUTSIG_EVERY=$3 mpirun -np 1 -x LD_PRELOAD="$B/probe/.libs/libscout_probe.so" -x SCOUT_JOB_ID=999999 \
    -x SCOUT_STEP_ID=bench -x SCOUT_OUTSIG_EVERY "$B/bench/probe_bench" "$1" "$2"
  rm -f /dev/shm/scout.999999.bench.* 2>/dev/null || true
  echo
done
echo "== probe cost per point-to-point call (2 ranks, 8 bytes)"
mpirun -np 2 --bind-to none -x LD_PRELOAD="$B/probe/.libs/libscout_probe.so" -x SCOUT_JOB_ID=999998 \
  -x SCOUT_STEP_ID=bench "$B/bench/p2p_bench" 200000
rm -f /dev/shm/scout.999998.bench.* 2>/dev/null || true
echo
if [ -x "$B/bench/nccl_bench" ]; then
  echo "== NCCL probe cost per call and completion-thread cost (stand-in libcuda/libnccl, 1 rank)"
  LD_LIBRARY_PATH="$B/tests/standin" LD_PRELOAD="$B/probe/.libs/libscout_nccl.so" SCOUT_JOB_ID=999997 \
    SCOUT_STEP_ID=bench RANK=0 WORLD_SIZE=1 "$B/bench/nccl_bench" 20000
  rm -f /dev/shm/scout.999997.bench.* /dev/shm/scoutstandin.* 2>/dev/null || true
  echo
fi
echo "== point-to-point detection: delays, smallest slowdown named, third-party overhead"
sh "$top_srcdir/bench/p2p-detection.sh"
echo
echo "== where in the code: tests/mpi_bugs at 2, 3, 4 and 8 ranks (kind, ranks, call sites, time to verdict)"
sh "$top_srcdir/bench/mpi-bugs.sh"
echo
echo "== overhead on unmodified Debian MPI programs: interleaved pairs, mean ratio with a 95% interval (docs/campaign.md)"
sh "$top_srcdir/bench/overhead.sh"
echo
echo "== fault campaign on unmodified Debian programs: stragglers three ways, stops, crashes, healthy runs (docs/campaign.md)"
sh "$top_srcdir/bench/fault-campaign.sh"
echo
echo "== replay (silent data corruption): cost per cycle, budget under load"
"$B/bench/replay_bench"
echo
echo "== CPU-bound mpi_train under scout-run, replay on (a cycle every 2 s, budget 1%) vs off"
sh "$top_srcdir/bench/replay-slowdown.sh"
echo
echo "== straggler detection (scoutd's detector on 64 synthetic ranks, +-20% jitter)"
"$B/bench/straggler_bench"
echo
echo "== the end rules at a teardown of N ranks (one gather), against the old pairwise pass"
"$B/bench/teardown_bench"
echo
echo "== consensus round latency (binary tree over point-to-point, hop deadline 0.5 s)"
for k in 4 16 64; do
  timeout 300 mpirun -np "$k" --oversubscribe --enable-recovery --bind-to none \
    --mca mpi_yield_when_idle 1 "$B/bench/round_bench" 256 2>/dev/null | \
    if [ "$k" = 4 ]; then cat; else tail -1; fi || echo "$k observers: failed"
done
echo "(gather: 256 ranks x 320 B of evidence per observer; loss round: the round"
echo " that detects a SIGKILLed observer, bounded by the hop deadlines)"
echo
echo "== the engine simulator's seed swarm, 200 seeds (make check runs 12): every invariant kept, every fault named"
make -s -C "$B" tests/unit/test_engine_sim >/dev/null
SCOUT_SWARM_SEEDS=200 "$B/tests/unit/test_engine_sim" -tc="*seed swarm*" 2>&1 | grep -E "swarm of|test cases|assertions|ERROR" || true
echo
echo "== consensus rounds and verdicts at scale: scout-sim (TreeRound and scoutd's round engine over a simulated network, docs/scale.md)"
"$B/sim/scout-sim" --members 8,64,512,4096,12500
echo "(scoutd's round defaults, virtual time; B/member/round: every member's bytes sent per round; crash_s,"
echo " root_crash_s, frozen_s: from the fault until every survivor holds the member lost; back_s: from the"
echo " thaw until the root decides for all; baseline: 8 members, the same code)"
echo
echo "== the seed swarm: random job and scoutd faults, every simulated run checked (sim/swarm.hpp, docs/scale.md)"
"$B/sim/scout-sim" --swarm 3000 || echo "(a seed broke an invariant: rerun it alone with --swarm 1 --swarm-first SEED)"
echo
echo "== ledger durability: cost per verdict commit, synchronous=FULL vs NORMAL"
"$B/tests/integration/ledger_writer" bench "$(mktemp -d)/durability.db" 2000
echo
echo "== site ledger service: submissions with 64 clients, the epilog's decision time"
sh "$top_srcdir/bench/ledgerd-bench.sh"
echo
echo "== crash consistency of scout-ledgerd: SIGKILL under 64 clients, 50 times"
SCOUT_CRASHES=50 sh "$top_srcdir/tests/integration/47_ledgerd_crash.sh" 2>&1 | grep -E "^(scout-ledgerd SIGKILLed|FAIL)"
echo
echo "== from a job's end to each node's epilog decision: 50 jobs on the test cluster under load"
sh "$top_srcdir/bench/epilog-latency.sh" 2>&1 | grep -v "^PASS"
echo
echo "== federated outlier detection (MemAE): Shuttle, Satellite, Vowel; per-node metrics, 9 methods"
sh "$top_srcdir/bench/fedad-datasets.sh"
