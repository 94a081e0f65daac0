// scoutd: the per-node scout observer. main() reads as init calls and their
// fini calls in reverse; signal handlers only set a flag.
#include <mpi.h>

#include <csignal>
#include <cstdio>
#include <cstring>

#include <unistd.h>

#include "scoutd/config.hpp"
#include "scoutd/daemon.hpp"
#include "sql/ledger.hpp"
#ifdef HAVE_CUDA
#include "scoutd/gpu_backend.hpp"
#endif

namespace {
extern "C" void on_stop_signal(int) { scout::scoutd::g_stop_signal = 1; }

void install_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGUSR1}) sigaction(s, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}
}  // namespace

int main(int argc, char** argv) {
  scout::scoutd::ScoutdConfig cfg;
  try {
    if (!scout::scoutd::parse_scoutd_args(argc, argv, cfg)) return 0;
    scout::scoutd::validate(cfg);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scoutd: config: %s\n", e.what());
    return 2;
  }
  if (cfg.print_config) {
    std::fputs(scout::scoutd::print_config(cfg).c_str(), stdout);
    return 0;
  }
  install_signals();
#ifdef HAVE_CUDA
  if (cfg.replay) scout::scoutd::install_gpu_backend();  // no GPU or driver: no devices, nothing runs
#endif
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "scoutd: mpi: MPI_Init_thread failed\n");
    return 1;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  install_signals();  // MPI_Init may have installed its own
  int rc = 0;
  bool peers_lost = false;
  try {
    scout::scoutd::Daemon d(cfg);
    rc = d.run();
    peers_lost = d.peers_lost();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scoutd: %s\n", e.what());
    rc = 1;
  }
  if (peers_lost) {
    // Everything is committed; MPI_Finalize would wait for the dead member.
    std::fflush(nullptr);
    _exit(rc);
  }
  MPI_Finalize();
  return rc;
}
