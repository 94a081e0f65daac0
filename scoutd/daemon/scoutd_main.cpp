// scoutd: the per-node scout observer. main() reads as init calls and their
// fini calls in reverse; signal handlers only set a flag or a time.
#include <mpi.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <unistd.h>

#include "common/log.hpp"
#include "scoutd/daemon/config.hpp"
#include "scoutd/daemon/daemon.hpp"
#include "scoutd/observe/rank_watcher.hpp"
#include "sql/ledger.hpp"
#ifdef HAVE_CUDA
#include "scoutd/beside/gpu_backend.hpp"
#endif

namespace {
// A stop has a hard deadline: the observers stop by agreement and commit
// within a few seconds, but a scoutd whose peers are gone (a step killed
// around it, a lost node) could otherwise wait in MPI for ever, holding the
// job's runtime directory and a core while Slurm waits for the step
// (the plugin's grace, 20 s, then KillWait). Everything committed is in
// SQLite's WAL already; SIGALRM's default action ends the process.
// The deadline covers the stop round (up to two round timeouts) and the
// forwarder's drain (5 s): at least 15 s (set from the options at start).
unsigned g_stop_deadline_s = 15;
extern "C" void on_stop_signal(int) {
  if (!scout::scoutd::g_stop_signal) alarm(g_stop_deadline_s);  // async-signal-safe
  scout::scoutd::g_stop_signal = 1;
}

// SIGUSR2: the launcher (scout-run) is about to stop the job; the ranks'
// deaths that follow are not crashes. The observers go on until SIGUSR1.
// Under Slurm nothing of scout sends it, and a job's user who could (a
// scoutd of her own uid) must not hide a crash with it: ignored.
extern "C" void on_job_stopping_signal(int) { scout::scoutd::RankWatcher::note_job_stopping(); }

void install_signals(bool slurm) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGUSR1}) sigaction(s, &sa, nullptr);
  struct sigaction su {};
  su.sa_handler = slurm ? SIG_IGN : on_job_stopping_signal;
  su.sa_flags = SA_RESTART;  // the daemon goes on: no interrupted call
  sigemptyset(&su.sa_mask);
  sigaction(SIGUSR2, &su, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGALRM, SIG_DFL);  // the stop deadline ends the process, whatever a library installed
}
}  // namespace

int main(int argc, char** argv) {
  scout::log::init("scoutd", {});  // options are checked before the daemon starts
  scout::scoutd::ScoutdConfig cfg;
  try {
    if (!scout::scoutd::parse_scoutd_args(argc, argv, cfg)) return 0;
    scout::scoutd::validate(cfg);
  } catch (const std::exception& e) {
    scout::log::error("config: {}", e.what());
    return 2;
  }
  if (cfg.print_config) {
    std::fputs(scout::scoutd::print_config(cfg).c_str(), stdout);
    return 0;
  }
  // A daemon: time-stamped lines to its log file; under Slurm also syslog.
  scout::log::init("scoutd", {false, true, cfg.slurm});
  g_stop_deadline_s = static_cast<unsigned>(std::max(15.0, 2 * cfg.round_timeout_s + 10));
  install_signals(cfg.slurm);
#ifdef HAVE_CUDA
  if (cfg.replay) scout::scoutd::install_gpu_backend(cfg.replay_timeout_s);  // no GPU: nothing runs
#endif
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    scout::log::error("mpi: MPI_Init_thread failed");
    return 1;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  install_signals(cfg.slurm);  // MPI_Init may have installed its own
  int rc = 0;
  bool peers_lost = false;
  try {
    scout::scoutd::Daemon d(cfg);
    rc = d.run();
    peers_lost = d.peers_lost();
  } catch (const std::exception& e) {
    scout::log::error("{}", e.what());
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
