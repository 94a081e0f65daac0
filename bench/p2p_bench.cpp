// Probe cost per point-to-point call, 2 ranks on one host: an 8-byte
// MPI_Send/MPI_Recv ping-pong and an 8-byte MPI_Isend/MPI_Irecv/MPI_Waitall
// exchange, each through the preloaded probe (MPI_*) and without it (PMPI_*,
// the same calls minus the wrappers), interleaved, best of 7 rounds. Run it
// with the probe preloaded and SCOUT_JOB_ID set (bench/run-bench.sh does).
// Target: at most 50 ns added per call. A ping-pong iteration has 4 calls on
// its critical path (each rank's Send and Recv); the exchange, 3 per rank.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {
using Clock = std::chrono::steady_clock;

// One iteration: rank 0 sends then receives, rank 1 the reverse (2 calls each).
template <bool Probed>
double pingpong(long n, int rank) {
  double x = 1.0;
  auto t0 = Clock::now();
  for (long i = 0; i < n; ++i) {
    if (rank == 0) {
      if (Probed) { MPI_Send(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD); MPI_Recv(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
      else { PMPI_Send(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD); PMPI_Recv(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
    } else {
      if (Probed) { MPI_Recv(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD); }
      else { PMPI_Recv(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); PMPI_Send(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD); }
    }
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
}

// One iteration: Irecv + Isend + Waitall(2) on each rank (3 calls each).
template <bool Probed>
double exchange(long n, int rank) {
  double out = 1.0, in = 0.0;
  const int peer = 1 - rank;
  MPI_Request rq[2];
  auto t0 = Clock::now();
  for (long i = 0; i < n; ++i) {
    if (Probed) {
      MPI_Irecv(&in, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &rq[0]);
      MPI_Isend(&out, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &rq[1]);
      MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    } else {
      PMPI_Irecv(&in, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &rq[0]);
      PMPI_Isend(&out, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &rq[1]);
      PMPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    }
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) std::fprintf(stderr, "p2p_bench: run with exactly 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  const long n = argc > 1 ? std::atol(argv[1]) : 200000;
  double pp_plain = 1e12, pp_probe = 1e12, ex_plain = 1e12, ex_probe = 1e12;
  for (int round = 0; round < 7; ++round) {
    PMPI_Barrier(MPI_COMM_WORLD);
    pp_plain = std::min(pp_plain, pingpong<false>(n, rank));
    PMPI_Barrier(MPI_COMM_WORLD);
    pp_probe = std::min(pp_probe, pingpong<true>(n, rank));
    PMPI_Barrier(MPI_COMM_WORLD);
    ex_plain = std::min(ex_plain, exchange<false>(n, rank));
    PMPI_Barrier(MPI_COMM_WORLD);
    ex_probe = std::min(ex_probe, exchange<true>(n, rank));
  }
  if (rank == 0) {
    const bool probed = std::getenv("SCOUT_JOB_ID") != nullptr;
    std::printf("%-44s %12s %12s %10s %8s\n", "8-byte point-to-point, 2 ranks", "without ns", probed ? "with ns" : "NOT LOADED",
                "added/call", "target");
    // A ping-pong serialises the two ranks: all 4 calls of an iteration (a
    // Send and a Recv on each rank) are on its critical path. The exchange
    // runs both ranks at once: 3 calls per rank per iteration.
    const double pp_add = (pp_probe - pp_plain) / 4, ex_add = (ex_probe - ex_plain) / 3;
    std::printf("%-44s %12.1f %12.1f %10.1f %8s\n", "Send+Recv ping-pong (per iteration, 4 calls)", pp_plain, pp_probe,
                pp_add, pp_add <= 50 ? "ok" : "MISS");
    std::printf("%-44s %12.1f %12.1f %10.1f %8s\n", "Irecv+Isend+Waitall (per iteration, 3 calls)", ex_plain, ex_probe,
                ex_add, ex_add <= 50 ? "ok" : "MISS");
    std::printf("%-44s %12.2fx %11.2fx\n", "ratio with/without", pp_probe / pp_plain, ex_probe / ex_plain);
  }
  MPI_Finalize();
  return 0;
}
