// scout-run: the launcher without Slurm. Starts K scoutds (one per simulated
// node) as one MPI job and PROGRAM as another with the probe preloaded,
// returns PROGRAM's exit status, and leaves no process, socket or shm record
// behind, also when PROGRAM is killed or hangs and the user presses Ctrl-C.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/options.hpp"
#include "common/ids.hpp"
#include "libc3/rank_record.hpp"
#include "scoutd/daemon/config.hpp"
#include "common/proc_info.hpp"
#include "common/process.hpp"
#include "common/runtime_paths.hpp"
#include "sql/ledger.hpp"

namespace fs = std::filesystem;
namespace sd = scout::scoutd;

namespace {

volatile sig_atomic_t g_interrupts = 0;
extern "C" void on_interrupt(int) { g_interrupts = g_interrupts + 1; }

struct Options {
  int ranks = 4, nodes = 1;
  std::string ledger, job_id, runtime_root;
  double stall = scout::common::kStallThreshold.def, period = scout::common::kRoundPeriod.def,
         timeout = scout::common::kRoundTimeout.def, grace = scout::common::kGrace.def;
  std::string ckpt_dir, outsig_every;
  std::vector<std::string> scoutd_args;
  std::vector<std::string> program;
  bool required = false;
  std::string probes = "all";  // --probe: mpi, nccl or all
};

[[noreturn]] void usage_error(const std::string& msg) {
  const bool names_help = msg.find("--help") != std::string::npos;
  std::fprintf(stderr, "scout-run: %s%s\n", msg.c_str(), names_help ? "" : " (see scout-run --help)");
  std::exit(2);
}

// The one table of scout-run's options: parser and --help.
scout::opts::Table make_table(Options& o) {
  scout::opts::Table t("scout-run", "scout-run [OPTIONS] -- PROGRAM [ARGS...]",
                       "Run an MPI program under scout without Slurm: K scoutds watch it, one per\n"
                       "simulated node, and verdicts go to the ledger.",
                       "Prints the job id on stderr as 'scout-run: job ID'. When scout's own machinery\n"
                       "fails (the ledger cannot be opened, the scoutds do not start), PROGRAM still\n"
                       "runs, unobserved, after a warning; --required makes that exit 3 instead.\n"
                       "Exit status: PROGRAM's, 128+N if it was killed by signal N, 2 for a usage\n"
                       "error, 3 if --required and scout could not observe PROGRAM.\n");
  t.add({"ranks", 'n', "N", "MPI ranks of PROGRAM", "",
         [&o](const std::string& v) { o.ranks = scout::opts::parse_int("--ranks", v, 1, 4096); },
         [&o] { return std::to_string(o.ranks); }});
  t.integer("nodes", "K", o.nodes, 1, 1024, "simulated nodes, one scoutd each (1..N)");
  t.text("ledger", "PATH", o.ledger,
         "ledger (default $SCOUT_LEDGER or\n${XDG_STATE_HOME:-~/.local/state}/scout/ledger.db)");
  t.setting(scout::common::kStallThreshold, o.stall);
  t.text("job-id", "ID", o.job_id, "use this job id (decimal) instead of a new one");
  t.setting(scout::common::kRoundPeriod, o.period);
  t.setting(scout::common::kRoundTimeout, o.timeout);
  t.text("runtime-dir", "DIR", o.runtime_root, "runtime root for control sockets");
  t.setting(scout::common::kGrace, o.grace);
  t.text("ckpt-dir", "DIR", o.ckpt_dir,
         "certify the checkpoints PROGRAM writes to DIR\n(scoutctl checkpoints|recovery)");
  t.add({"outsig-every", 0, "N",
         "sign every Nth Allreduce/Bcast/Allgather output per\ncommunicator (default $SCOUT_OUTSIG_EVERY or 64; 0 off)", "",
         [&o](const std::string& v) { o.outsig_every = std::to_string(scout::opts::parse_int("--outsig-every", v, 0, 1 << 30)); },
         [&o] { return o.outsig_every; }});
  t.add({"probe", 0, "WHICH",
         "probes to preload: mpi (MPI calls), nccl (NCCL calls\non CUDA streams) or all (default: each activates\nonly when the program initialises its library)", "",
         [&o](const std::string& v) {
           if (v != "mpi" && v != "nccl" && v != "all")
             throw scout::opts::ConfigError("--probe: '" + v + "'; expected mpi, nccl or all");
           o.probes = v;
         },
         [&o] { return o.probes; }});
  t.flag("required", o.required, "fail (exit 3) instead of running PROGRAM unobserved\nwhen scout cannot observe it");
  t.add({"scoutd-arg", 0, "ARG", "pass ARG to every scoutd (repeatable), e.g.\n--scoutd-arg=--replay-interval=60", "",
         [&o](const std::string& v) { o.scoutd_args.push_back(v); }, nullptr, true});
  return t;
}

Options parse(int argc, char** argv) {
  Options o;
  int i = argc;
  try {
    if (make_table(o).parse(argc, argv, true, &i) == scout::opts::Table::Outcome::kPrinted) std::exit(0);
  } catch (const scout::opts::ConfigError& e) {
    usage_error(e.what());
  }
  for (; i < argc; ++i) o.program.emplace_back(argv[i]);
  if (o.program.empty()) usage_error("missing PROGRAM; expected 'scout-run [OPTIONS] -- PROGRAM [ARGS...]'");
  if (o.nodes > o.ranks)
    usage_error(fmt::format("--nodes: {} nodes for {} ranks; expected at most one node per rank", o.nodes, o.ranks));
  if (!o.job_id.empty() && !scout::common::valid_job_id(o.job_id))
    usage_error(fmt::format("--job-id: '{}' is not a job id; expected a decimal number", o.job_id));
  if (!o.ckpt_dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(o.ckpt_dir, ec))
      usage_error(fmt::format("--ckpt-dir: '{}' is not a directory; expected the directory the program "
                              "writes its checkpoints to", o.ckpt_dir));
    o.ckpt_dir = fs::absolute(o.ckpt_dir).string();
  }
  if (o.ledger.empty()) o.ledger = scout::common::default_ledger_path();
  if (o.runtime_root.empty()) o.runtime_root = scout::common::default_runtime_root();
  return o;
}

std::string self_dir() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

// Build tree first (scoutd in ../scoutd, the probe in ../probe/.libs),
// then the installed locations; environment variables win.
std::string find_scoutd() {
  if (const char* e = std::getenv("SCOUT_SCOUTD"); e && *e) return e;
  std::string local = self_dir() + "/../scoutd/scoutd";
  if (::access(local.c_str(), X_OK) == 0) return fs::weakly_canonical(local).string();
  return std::string(SCOUT_SBINDIR) + "/scoutd";
}
std::string find_probe() {
  if (const char* e = std::getenv("SCOUT_PROBE_LIB"); e && *e) return e;
  std::string local = self_dir() + "/../probe/.libs/libscout_probe.so";
  if (::access(local.c_str(), R_OK) == 0) return fs::weakly_canonical(local).string();
  return std::string(SCOUT_LIBDIR) + "/libscout_probe.so";
}

// The NCCL probe: built only where the CUDA toolkit has NCCL ("" if absent).
std::string find_nccl_probe() {
  if (const char* e = std::getenv("SCOUT_NCCL_PROBE_LIB"); e && *e) return e;
  std::string local = self_dir() + "/../probe/.libs/libscout_nccl.so";
  if (::access(local.c_str(), R_OK) == 0) return fs::weakly_canonical(local).string();
  std::string installed = std::string(SCOUT_LIBDIR) + "/libscout_nccl.so";
  return ::access(installed.c_str(), R_OK) == 0 ? installed : "";
}

// Starts `args` in its own process group: stdin on /dev/null, stdout and
// stderr shared with scout-run, nothing else of scout-run's (its ledger, its
// sockets) passed on. -1, with the reason on stderr, when it cannot start.
pid_t spawn(const std::vector<std::string>& args) {
  scout::common::Command c;
  c.argv = args;
  c.fds = {{1, 1}, {2, 2}};
  auto s = scout::common::start(c);
  if (!s.ok()) std::fprintf(stderr, "scout-run: %s\n", s.error.c_str());
  return s.pid;
}

// Waits for `pid` up to `seconds`; true and *status when it exited.
bool wait_for(pid_t pid, double seconds, int* status) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void terminate_group(pid_t pid, double grace, int* status) {
  ::kill(-pid, SIGTERM);
  if (wait_for(pid, grace, status)) {
    ::kill(-pid, SIGKILL);  // stragglers of the group
    return;
  }
  ::kill(-pid, SIGKILL);
  wait_for(pid, 5, status);
}

int count_sockets(const std::string& dir) { return static_cast<int>(scout::common::list_control_sockets(dir).size()); }

// True when `pid` is a live (not zombie) process of this job: its
// environment carries SCOUT_JOB_ID=<job> (guards against pid reuse).
bool is_live_job_process(int pid, const std::string& job) {
  const std::string stat = scout::common::proc_stat_fields(pid);
  if (stat.empty() || stat[0] == 'Z') return false;
  std::size_t n = 0;
  std::FILE* e = std::fopen(fmt::format("/proc/{}/environ", pid).c_str(), "r");
  if (!e) return false;
  std::string env;
  char chunk[4096];
  while ((n = std::fread(chunk, 1, sizeof chunk, e)) > 0) env.append(chunk, n);
  std::fclose(e);
  return env.find("SCOUT_JOB_ID=" + job + '\0') != std::string::npos;
}

// Ranks that outlived their mpirun (it was killed) are killed here, found
// through the pids the observers recorded in the ledger.
void kill_orphaned_ranks(scout::sql::Ledger& ledger, const std::string& job) {
  for (int pid : ledger.rank_pids(job))
    if (is_live_job_process(pid, job)) {
      ::kill(pid, SIGKILL);
      std::fprintf(stderr, "scout-run: killed rank process %d left behind by mpirun\n", pid);
    }
}

void remove_records(const std::string& job) {
  const std::string prefix = scout::c3::record_shm_prefix(job);
  DIR* d = opendir("/dev/shm");
  if (!d) return;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind(prefix, 0) == 0) shm_unlink(("/" + name).c_str());
  }
  closedir(d);
}

}  // namespace

int main(int argc, char** argv) {
  // Standard descriptors closed by the caller (`scout-run ... >&-`) are
  // /dev/null: the ledger must never be opened as fd 1 and handed on.
  for (int fd = 0; fd < 3; ++fd)
    if (::fcntl(fd, F_GETFD) < 0 && ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) < 0) return 1;
  Options o = parse(argc, argv);
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  if (!std::getenv("SCOUT_STEP_COLLECTIVE")) setenv("SCOUT_STEP_COLLECTIVE", "", 1);  // for -x
  if (geteuid() == 0) {  // Open MPI refuses root without these (CI runs as root)
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }

  // --- ledger and job id ---------------------------------------------------
  std::string command;
  for (auto& a : o.program) command += (command.empty() ? "" : " ") + a;
  std::optional<scout::sql::Ledger> ledger;
  try {
    ledger.emplace(scout::sql::Ledger::open(o.ledger, scout::sql::Ledger::Mode::kReadWrite));
    scout::sql::JobRow j;
    j.user = std::getenv("USER") ? std::getenv("USER") : std::to_string(getuid());
    j.uid = getuid();
    j.launcher = "scout-run";
    j.command = command;
    j.nodes = o.nodes;
    j.ranks = o.ranks;
    if (o.job_id.empty()) {
      o.job_id = ledger->reserve_local_job(j);
    } else {
      if (ledger->job(o.job_id))
        usage_error(fmt::format("--job-id: job {} is already in the ledger {}", o.job_id, o.ledger));
      j.job_id = o.job_id;
      ledger->insert_job(j);
    }
  } catch (const scout::sql::LedgerError& e) {
    // scout never keeps the program from running: without a ledger there is
    // nowhere to record verdicts, so the program runs unobserved.
    if (o.required) {
      std::fprintf(stderr, "scout-run: %s\nscout-run: --required: not running %s unobserved\n", e.what(),
                   o.program[0].c_str());
      return 3;
    }
    std::fprintf(stderr, "scout-run: warning: %s; running %s unobserved (--required makes this an error)\n",
                 e.what(), o.program[0].c_str());
    ledger.reset();
  }
  const bool observe = ledger.has_value();
  std::string job_dir;
  std::error_code ec;
  if (observe) {
    std::fprintf(stderr, "scout-run: job %s (ledger %s)\n", o.job_id.c_str(), o.ledger.c_str());
    job_dir = scout::common::job_runtime_dir(o.runtime_root, o.job_id);
    fs::create_directories(job_dir, ec);
    ::chmod(o.runtime_root.c_str(), 0700);
    ::chmod(job_dir.c_str(), 0700);
  }

  // --- observers -----------------------------------------------------------
  const std::string mpirun = SCOUT_MPIRUN;
  std::vector<std::string> obs = {mpirun, "-np", std::to_string(o.nodes), "--oversubscribe",
                                  "--bind-to", "none", "--enable-recovery",
                                  "--mca", "mpi_yield_when_idle", "1",
                                  "-x", "SCOUT_STEP_COLLECTIVE",
                                  find_scoutd(), "--job-id", o.job_id, "--ranks",
                                  std::to_string(o.ranks), "--simulate-nodes", "--ledger", o.ledger,
                                  "--runtime-dir", job_dir, "--stall-threshold",
                                  fmt::format("{}", o.stall), "--round-period",
                                  fmt::format("{}", o.period), "--round-timeout",
                                  fmt::format("{}", o.timeout)};
  if (!o.ckpt_dir.empty()) {
    obs.push_back("--ckpt-dir");
    obs.push_back(o.ckpt_dir);
  }
  for (auto& a : o.scoutd_args) obs.push_back(a);
  if (std::getenv("SCOUT_REPLAY_FAULT")) {  // test-only fault injection
    obs.insert(obs.begin() + 1, {"-x", "SCOUT_REPLAY_FAULT"});
  }
  pid_t obs_pid = observe ? spawn(obs) : -1;
  bool observers_up = false;
  for (int k = 0; k < 600 && obs_pid > 0; ++k) {  // up to 30 s
    if (count_sockets(job_dir) >= o.nodes) { observers_up = true; break; }
    int st;
    if (waitpid(obs_pid, &st, WNOHANG) == obs_pid) { obs_pid = -1; break; }
    if (g_interrupts) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (observe && !observers_up) {
    if (o.required) {
      std::fprintf(stderr, "scout-run: scoutds did not start; --required: not running %s unobserved\n",
                   o.program[0].c_str());
      if (obs_pid > 0) terminate_group(obs_pid, 3, nullptr);
      try {
        ledger->end_job(o.job_id, 3);
      } catch (const std::exception&) {
      }
      if (!job_dir.empty()) fs::remove_all(job_dir, ec);
      return 3;
    }
    std::fprintf(stderr, "scout-run: warning: scoutds did not start; running %s unobserved\n",
                 o.program[0].c_str());
  }

  // --- the program -----------------------------------------------------------
  std::string preload;
  if (o.probes != "nccl") preload = find_probe();
  if (o.probes != "mpi") {
    const std::string nccl = find_nccl_probe();
    if (nccl.empty() && o.probes == "nccl")
      std::fprintf(stderr, "scout-run: warning: --probe=nccl: libscout_nccl.so is not installed (scout was built "
                   "without NCCL); NCCL calls run unobserved\n");
    if (!nccl.empty()) preload += (preload.empty() ? "" : ":") + nccl;
  }
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  std::vector<std::string> train = {mpirun, "-np", std::to_string(o.ranks), "--oversubscribe",
                                    "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"};
  if (observers_up) {
    for (auto& kv : {std::pair<std::string, std::string>{"LD_PRELOAD", preload},
                     {"SCOUT_JOB_ID", o.job_id}, {"SCOUT_STEP_ID", "0"}}) {
      setenv(kv.first.c_str(), kv.second.c_str(), 1);
      train.push_back("-x");
      train.push_back(kv.first);
    }
    if (!o.outsig_every.empty()) setenv("SCOUT_OUTSIG_EVERY", o.outsig_every.c_str(), 1);
    for (const char* v : {"SCOUT_PROBE_TEST_DELAY", "SCOUT_OUTSIG_EVERY", "LD_LIBRARY_PATH"})  // test-only / tuning
      if (std::getenv(v)) {
        train.push_back("-x");
        train.push_back(v);
      }
  }
  for (auto& a : o.program) train.push_back(a);
  const bool interrupted_before = g_interrupts != 0;
  pid_t prog = interrupted_before ? -1 : spawn(train);
  unsetenv("LD_PRELOAD");  // never preload into anything else we start

  int status = 0, rc = 1;
  bool done = prog < 0;
  int noticed = 0;
  using clock = std::chrono::steady_clock;
  auto interrupt_at = clock::time_point::max(), killed_at = clock::time_point::max();
  while (!done) {
    if (wait_for(prog, 0.05, &status)) {
      done = true;
      break;
    }
    if (g_interrupts > noticed) {
      noticed = g_interrupts;
      if (interrupt_at == clock::time_point::max()) {
        std::fprintf(stderr, "scout-run: interrupted: stopping %s\n", o.program[0].c_str());
        // The scoutds hear first that the job is being stopped (mpirun
        // forwards SIGUSR2): mpirun kills the ranks one after another, and
        // the first to go is no crash. The program's mpirun gets its SIGINT
        // a moment later.
        const bool tell = observers_up && obs_pid > 0;  // a scoutd not up may not handle it yet
        if (tell) ::kill(obs_pid, SIGUSR2);
        interrupt_at = clock::now() + std::chrono::milliseconds(tell ? 300 : 0);
      } else {
        ::kill(-prog, SIGKILL);  // a second Ctrl-C: at once
      }
    }
    if (killed_at == clock::time_point::max() && clock::now() >= interrupt_at) {
      ::kill(-prog, SIGINT);  // mpirun tears its job down
      killed_at = clock::now();
    }
    if (clock::now() - killed_at > std::chrono::seconds(5)) {
      ::kill(-prog, SIGKILL);  // stopped ranks do not act on SIGTERM
      ::kill(-prog, SIGCONT);
    }
  }
  // Not started: 130 if a Ctrl-C came first, 127 (as a shell says) if
  // mpirun could not be run.
  rc = prog < 0 ? (interrupted_before ? 130 : 127) : scout::common::exit_code(status);
  if (prog > 0) ::kill(-prog, SIGKILL);  // leftovers of its group, if any
  try {
    if (ledger) kill_orphaned_ranks(*ledger, o.job_id);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scout-run: %s\n", e.what());
  }

  // --- stop the observers: they agree to stop, gather last evidence, exit ----
  if (obs_pid > 0) {
    ::kill(obs_pid, SIGUSR1);  // mpirun forwards SIGUSR1 to every scoutd
    int st = 0;
    if (!wait_for(obs_pid, o.grace, &st)) {
      std::fprintf(stderr, "scout-run: scoutds did not stop within %.0f s; terminating them\n", o.grace);
      terminate_group(obs_pid, 3, &st);
    } else {
      ::kill(-obs_pid, SIGKILL);
    }
  }
  if (!observe) {
    std::fprintf(stderr, "scout-run: %s (unobserved) finished with status %d\n", o.program[0].c_str(), rc);
    return rc;
  }
  try {
    ledger->end_job(o.job_id, rc);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scout-run: %s\n", e.what());
  }
  remove_records(o.job_id);
  fs::remove_all(job_dir, ec);
  std::fprintf(stderr, "scout-run: job %s finished with status %d\n", o.job_id.c_str(), rc);
  return rc;
}
