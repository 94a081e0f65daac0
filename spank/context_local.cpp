// Local (srun) context: start the scoutd companion step before the tasks
// run, as its own MPI job with one scoutd per node of the step, and stop it
// when the step ends. Facts this relies on are in docs/architecture.md and scout(8):
// srun blocks signals here, holds fds >= 3, and recurses unless the
// companion's environment is cleaned and marked.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/process.hpp"
#include "common/runtime_paths.hpp"
#include "common/settings.hpp"
#include "common/spool_paths.hpp"
#include "spank/plugin_state.hpp"

extern char** environ;

namespace scout::spank {

namespace {

bool dropped(const std::string& name) {
  static const char* const kExact[] = {
      "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_TASKS_PER_NODE", "SLURM_DISTRIBUTION",
      "SLURM_MEM_BIND", "SRUN_CPUS_PER_TASK", "SLURM_MPI_TYPE", "SLURM_STEPID", "SLURM_GRES",
      "SLURM_KILL_BAD_EXIT", "SLURM_NO_KILL", "SLURM_WAIT", "LD_PRELOAD", "SLURM_CPUS_PER_TASK"};
  static const char* const kPrefix[] = {
      "SLURM_STEP_", "SLURM_CPU_BIND", "SLURM_GPUS", "PMIX_", "OMPI_", "_SLURM_SPANK_OPTION_scout_",
      "SLURM_SPANK__SLURM_SPANK_OPTION_scout_", "SLURM_NTASKS_PER_", "SLURM_CPUS_PER_"};
  // The site's and the user's choice of network for Open MPI (interfaces,
  // transports) holds for the companion's MPI too; what a launcher set for
  // its own processes (OMPI_COMM_WORLD_*, OMPI_MCA_ess_*, ...) does not.
  static const char* const kKeep[] = {"OMPI_MCA_btl", "OMPI_MCA_oob", "OMPI_MCA_pml", "OMPI_MCA_mtl"};
  std::string n = name.substr(0, name.find('='));
  for (auto* k : kKeep)
    if (n.rfind(k, 0) == 0) return false;
  for (auto* e : kExact)
    if (n == e) return true;
  for (auto* p : kPrefix)
    if (n.rfind(p, 0) == 0) return true;
  if (n.size() > 9 && n.compare(n.size() - 9, 9, "_PER_NODE") == 0) return true;
  return false;
}

std::uint32_t item_u32(spank_t sp, spank_item_t item, const char* env) {
  std::uint32_t v = 0;
  if (spank_get_item(sp, item, &v) == ESPANK_SUCCESS) return v;
  const char* e = std::getenv(env);
  return e ? static_cast<std::uint32_t>(std::strtoul(e, nullptr, 10)) : 0;
}

// The step's node list at this point: srun has it in its environment once
// the step exists; inside a bigger allocation the companion must use it.
std::string step_nodelist() {
  for (const char* v : {"SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST"})
    if (const char* e = std::getenv(v); e && *e) return e;
  return "";
}

// The user's own runtime directory on this host, if it is hers and private.
std::string companion_log_dir() {
  std::string dir;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x == '/') dir = x;
  else dir = "/run/user/" + std::to_string(::geteuid());
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    return {};
  return dir;
}

}  // namespace

int local_user_init(spank_t sp) {
  auto& st = state();
  const auto& cfg = st.cfg;
  if (std::getenv(kCompanionEnv)) return 0;  // the companion's own srun: no recursion
  if (!scout_enabled(std::getenv(kSbatchOptionEnv))) return 0;
  const std::uint32_t job = item_u32(sp, S_JOB_ID, "SLURM_JOB_ID");
  const std::uint32_t step = item_u32(sp, S_JOB_STEPID, "SLURM_STEP_ID");
  const std::uint32_t nnodes = item_u32(sp, S_JOB_NNODES, "SLURM_NNODES");
  const std::uint32_t ntasks = item_u32(sp, S_JOB_TOTAL_TASK_COUNT, "SLURM_NTASKS");
  auto fail = [&](const std::string& why) {
    if (cfg.required) {
      slurm_error("scout: local: %s; scout is required at this site, the step is not started", why.c_str());
      return -1;
    }
    slurm_info("scout: local: warning: %s; the job runs unobserved", why.c_str());
    return 0;
  };
  if (job == 0 || nnodes == 0 || ntasks == 0)
    return fail("cannot tell the job id, node or task count of this step");
  if (::access(cfg.scoutd.c_str(), X_OK) != 0)
    return fail("scoutd " + cfg.scoutd + ": " + std::strerror(errno));
  if (::access(cfg.probe.c_str(), R_OK) != 0)
    return fail("probe " + cfg.probe + ": " + std::strerror(errno));

  const std::string jid = std::to_string(job), sid = std::to_string(step);
  const double stall = st.opt_stall > 0 ? st.opt_stall : cfg.stall_threshold;
  const std::string nodes = std::to_string(nnodes);
  std::vector<std::string> args = {cfg.srun, "--jobid=" + jid, "--overlap", "--mpi=pmix",
                                   "-N", nodes, "-n", nodes, "--ntasks-per-node=1",
                                   "--kill-on-bad-exit=0", "--disable-status", "--job-name=scout",
                                   "--quiet",
                                   // scoutd's log stays on its node, in the job's spool
                                   // directory root made there (%N: slurmstepd opens it on
                                   // each node, never srun here); its stdout says only
                                   // "scoutd ready NODE", relayed here by srun.
                                   "--error=" + common::spool_scoutd_log(cfg.spool, jid, sid, "%N"),
                                   "--open-mode=append"};
  if (std::string nl = step_nodelist(); !nl.empty()) args.push_back("--nodelist=" + nl);
  std::vector<std::string> tail = {cfg.scoutd, "--job-id", jid, "--step", sid, "--ranks",
                                   std::to_string(ntasks), "--slurm", "--ledger",
                                   common::spool_ledger(cfg.spool, jid), "--runtime-dir",
                                   common::job_runtime_dir(cfg.runtime_dir, jid)};
  // The plugstack's shared settings, passed on under scoutd's names for
  // them (common/settings.hpp).
  auto pass = [&tail](std::string_view flag, std::string value) {
    tail.push_back("--" + std::string(flag));
    tail.push_back(std::move(value));
  };
  pass(common::kStallThreshold.flag, std::to_string(stall));
  pass(common::kReplay.flag, cfg.replay ? "on" : "off");
  pass(common::kReplayInterval.flag, std::to_string(cfg.replay_interval));
  pass(common::kReplayBudget.flag, std::to_string(cfg.replay_budget));
  pass(common::kLearn.flag, cfg.learn ? "on" : "off");
  pass(common::kStacks.flag, cfg.stacks ? "on" : "off");
  if (!cfg.learn_aggregation.empty()) {
    tail.push_back("--learn-aggregation");
    tail.push_back(cfg.learn_aggregation);
  }
  if (!st.opt_ckpt_dir.empty()) {
    tail.push_back("--ckpt-dir");
    tail.push_back(st.opt_ckpt_dir);
  }
  args.insert(args.end(), tail.begin(), tail.end());
  // The companion's environment: srun's, less what must not reach it.
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (!dropped(*e)) env.emplace_back(*e);
  env.emplace_back(std::string(kCompanionEnv) + "=1");
  // Open MPI 4.1 (Debian 12's) collects the modex in one fence that each
  // process joins before its PML registers its receive callbacks, and has
  // no barrier after: a scoutd released first sends its first message to a
  // peer still in MPI_Init, whose TCP BTL then calls a NULL callback (tag
  // 0x41, ob1's MATCH; a core of it was taken under load, issue 34's note).
  // Without collecting the data, MPI_Init fences once more after add_procs,
  // so no scoutd sends before every peer can receive (addresses are then
  // fetched from the PMIx server on first contact: a few peers per scoutd).
  env.emplace_back("OMPI_MCA_pmix_base_collect_data=0");

  // srun's own messages about the companion go to the user's own runtime
  // directory on this host (XDG_RUNTIME_DIR or /run/user/UID: 0700, hers),
  // never to a shared directory; without one they are dropped.
  const std::string log_dir = companion_log_dir();
  const std::string log = log_dir.empty() ? std::string() : log_dir + "/scout." + jid + "." + sid + ".companion.log";
  int ready_fd = -1;  // read end of the companion's stdout: "scoutd ready NODE" lines
  std::string launch_error;
  auto launch = [&]() -> pid_t {
    int log_fd = log.empty() ? -1
                             : ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (log_fd >= 0) {
      struct stat lst {};
      if (::fstat(log_fd, &lst) != 0 || !S_ISREG(lst.st_mode) || lst.st_uid != ::geteuid()) {
        ::close(log_fd);
        log_fd = -1;
      }
    }
    int ready[2] = {-1, -1};
    if (cfg.companion_wait > 0 && ::pipe2(ready, O_CLOEXEC) != 0) ready[0] = ready[1] = -1;
    // stdin on /dev/null, stdout and stderr to the log (stdout to the ready
    // pipe when there is one), every other descriptor of srun's closed (its
    // shepherd pipe among them); every signal at its default and unblocked
    // (srun blocks HUP INT QUIT USR1 USR2 PIPE ALRM TERM); its own process
    // group; srun gone: the companion stops cleanly (SIGUSR1).
    common::Command c;
    c.argv = args;
    c.env = env;
    if (log_fd >= 0) c.fds = {{1, log_fd}, {2, log_fd}};
    if (ready[1] >= 0) {
      std::erase_if(c.fds, [](const auto& f) { return f.first == 1; });
      c.fds.push_back({1, ready[1]});
    }
    c.parent_death_signal = SIGUSR1;
    const common::Started started = common::start(c);
    if (log_fd >= 0) ::close(log_fd);
    if (ready[1] >= 0) ::close(ready[1]);
    if (!started.ok()) {
      if (ready[0] >= 0) ::close(ready[0]);
      launch_error = started.error;
      return -1;
    }
    if (ready_fd >= 0) ::close(ready_fd);
    ready_fd = ready[0];
    return started.pid;
  };
  // Optionally hold the job step until every scoutd is up (it prints
  // "scoutd ready NODE" on stdout, which srun relays to this process: the
  // nodes' runtime directories are node-local and not visible from here):
  // scout then sees the step from its first collective, and the two MPI
  // jobs do not initialise at the same moment. A companion that does not
  // come up in time (e.g. a scoutd that died in MPI_Init) is stopped and
  // started once more. Bounded.
  auto up = [&](pid_t pid) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(cfg.companion_wait);
    std::string pending;
    std::uint32_t ready = 0;
    while (std::chrono::steady_clock::now() < end) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) return -2;  // exited (reaped)
      if (ready_fd < 0) return 0;
      pollfd p{ready_fd, POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        char buf[512];
        const ssize_t n = ::read(ready_fd, buf, sizeof buf);
        if (n <= 0) return -1;  // the companion's stdout closed: it is gone
        pending.append(buf, static_cast<std::size_t>(n));
        for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
          ready += pending.compare(0, 13, "scoutd ready ") == 0;
          pending.erase(0, nl + 1);
        }
        if (pending.size() > 4096) pending.clear();  // not ours: bounded
        if (ready >= nnodes) return 1;
      }
    }
    return 0;  // timed out
  };
  // A companion that did not come up is stopped with its step: SIGTERM lets
  // its srun cancel the step (a SIGKILLed srun leaves the step's scoutds
  // running on the nodes, beside the ones started next, all of them
  // holding the job's runtime directory); SIGKILL after 5 s.
  auto stop_companion = [](pid_t p) {
    ::kill(-p, SIGTERM);
    int status = 0;
    for (int i = 0; i < 50; ++i) {
      const pid_t w = waitpid(p, &status, WNOHANG);
      if (w == p || (w < 0 && errno == ECHILD)) return;  // gone (and reaped)
      ::poll(nullptr, 0, 100);
    }
    ::kill(-p, SIGKILL);
    waitpid(p, &status, 0);
  };
  pid_t pid = launch();
  if (pid < 0) return fail("the scoutd companion: " + launch_error);
  if (cfg.companion_wait > 0) {
    int r = up(pid);
    if (r <= 0) {
      slurm_info("scout: local: warning: the scoutd companion did not come up within %.0f s; starting it again",
                 cfg.companion_wait);
      if (r != -2) stop_companion(pid);  // timed out, or its stdout closed while it may live on
      pid = launch();
      if (pid < 0) return fail("the scoutd companion: " + launch_error);
      const int r2 = up(pid);
      if (r2 <= 0) {
        // An error the user sees, with where to look; under `required` the
        // step does not start unobserved.
        const std::string where = log.empty() ? std::string("no log: no runtime directory of yours on this host")
                                              : "srun's messages in " + log;
        const std::string why = "the scoutd companion did not come up twice (" + where +
                                "; scoutd's own log on each node: " +
                                common::spool_scoutd_log(cfg.spool, jid, sid, "NODE") + ")";
        if (cfg.required) {
          if (r2 != -2) stop_companion(pid);
          if (ready_fd >= 0) ::close(ready_fd);
          slurm_error("scout: local: %s; scout is required at this site, the step is not started", why.c_str());
          return -1;
        }
        slurm_error("scout: local: %s; this step runs unobserved", why.c_str());
      }
    }
  }
  st.companion = pid;
  st.ready_fd = ready_fd;  // kept open while the companion runs: srun may relay more
  return 0;
}

int local_exit(spank_t) {
  auto& st = state();
  // The companion's stdout pipe is closed once srun has exited (never before:
  // a write to a closed pipe would kill it).
  struct CloseReady {
    int& fd;
    ~CloseReady() {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  } close_ready{st.ready_fd};
  if (st.companion <= 0) return 0;
  const pid_t pid = st.companion;
  st.companion = -1;
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) == pid) {
    slurm_info("scout: local: warning: the scoutd companion had already exited (status %d)", status);
    return 0;
  }
  // One SIGINT: srun (--disable-status) forwards it once to every scoutd,
  // which agree to stop and flush. SIGTERM would make srun SIGKILL them.
  ::kill(pid, SIGINT);
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(st.cfg.grace);
  while (std::chrono::steady_clock::now() < end) {
    if (waitpid(pid, &status, WNOHANG) == pid) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  slurm_info("scout: local: warning: the scoutd companion did not stop within %.0f s; killing it",
             st.cfg.grace);
  ::kill(-pid, SIGKILL);
  waitpid(pid, &status, 0);
  return 0;
}

}  // namespace scout::spank
