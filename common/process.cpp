// Starting a long-lived process (see process.hpp).
#include "common/process.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace scout::common {
namespace {

// What the child writes to the parent when a step before (or the) exec fails.
struct ChildError {
  int step;
  int err;
};
enum Step : int { kDescriptors = 1, kDevNull, kGroup, kParentDeath, kExec };

const char* step_words(int step) {
  switch (step) {
    case kDescriptors: return "passing it its descriptors";
    case kDevNull: return "opening /dev/null";
    case kGroup: return "giving it its own process group";
    case kParentDeath: return "setting its parent-death signal";
    default: return "";
  }
}

// argv[0] as execvp would find it, in the caller's PATH; "" and *why when
// it is nowhere. Done before fork: the child only execs.
std::string resolve(const std::string& name, std::string* why) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "/bin:/usr/bin";  // glibc's execvp: unset PATH; "" entries are "."
  bool denied = false;
  for (std::size_t b = 0;;) {
    const std::size_t e = dirs.find(':', b);
    const std::string dir = dirs.substr(b, e == std::string::npos ? std::string::npos : e - b);
    const std::string cand = (dir.empty() ? std::string(".") : dir) + "/" + name;
    struct stat st {};
    if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(cand.c_str(), X_OK) == 0) return cand;
      denied = true;
    }
    if (e == std::string::npos) break;
    b = e + 1;
  }
  *why = denied ? "permission denied (found in PATH, not executable)" : "not found in PATH";
  return "";
}

// Closes every descriptor from `from` up, except those in keep (sorted).
// Async-signal-safe: close_range where the kernel has it, else a loop up to
// `limit` (computed by the parent).
void close_from(int from, const int* keep, std::size_t nkeep, long limit) {
  auto close_span = [limit](int lo, int hi) {  // [lo, hi], hi == INT_MAX: to the end
    if (lo > hi) return;
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, static_cast<unsigned>(lo), hi == INT_MAX ? ~0U : static_cast<unsigned>(hi), 0) == 0)
      return;
#endif
    for (long fd = lo; fd <= hi && fd < limit; ++fd) ::close(static_cast<int>(fd));
  };
  int next = from;
  for (std::size_t i = 0; i < nkeep; ++i) {
    if (keep[i] < next) continue;
    close_span(next, keep[i] - 1);
    next = keep[i] + 1;
  }
  close_span(next, INT_MAX);
}

}  // namespace

int exit_code(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

Started start(const Command& cmd) {
  Started r;
  if (cmd.argv.empty() || cmd.argv[0].empty()) {
    r.error = "no program to run";
    return r;
  }
  const std::string& name = cmd.argv[0];
  std::string why;
  const std::string path = resolve(name, &why);
  if (path.empty()) {
    r.error = "cannot run " + name + ": " + why;
    return r;
  }
  struct rlimit nofile {};
  const long fd_limit = ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY
                            ? static_cast<long>(std::min<rlim_t>(nofile.rlim_cur, INT_MAX / 2))
                            : INT_MAX / 2;
  for (const auto& [child_fd, parent_fd] : cmd.fds) {
    if (child_fd < 0 || child_fd >= fd_limit) {
      r.error = "cannot run " + name + ": the child's descriptor " + std::to_string(child_fd) +
                " is outside 0.." + std::to_string(fd_limit - 1) + " (RLIMIT_NOFILE)";
      return r;
    }
    if (parent_fd < 0 || ::fcntl(parent_fd, F_GETFD) < 0) {
      r.error = "cannot run " + name + ": descriptor " + std::to_string(parent_fd) + " for the child's " +
                std::to_string(child_fd) + " is not open";
      return r;
    }
  }
  // Everything the child needs, built now.
  std::vector<char*> av, ev;
  for (auto& a : cmd.argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  if (cmd.env) {
    for (auto& e : *cmd.env) ev.push_back(const_cast<char*>(e.c_str()));
    ev.push_back(nullptr);
  }
  char* const* envp = cmd.env ? ev.data() : environ;
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    r.error = "cannot run " + name + ": pipe: " + std::strerror(errno);
    return r;
  }
  const std::size_t n = cmd.fds.size();
  std::vector<int> src(n), dst(n), tmp(n);
  int high = 2;
  for (std::size_t i = 0; i < n; ++i) {
    src[i] = cmd.fds[i].second;
    dst[i] = cmd.fds[i].first;
    high = std::max({high, src[i], dst[i]});
  }
  // The error pipe's write end above every child descriptor: no dup2 of the
  // child's can overwrite it.
  if (const int moved = ::fcntl(err_pipe[1], F_DUPFD_CLOEXEC, high + 1); moved >= 0) {
    ::close(err_pipe[1]);
    err_pipe[1] = moved;
  } else {
    const int e = errno;
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    r.error = "cannot run " + name + ": fcntl: " + std::strerror(e);
    return r;
  }
  high = std::max(high, err_pipe[1]);
  std::vector<int> keep;  // the child's descriptors above 2, and the error pipe (closed by exec)
  for (int d : dst)
    if (d > 2) keep.push_back(d);
  keep.push_back(err_pipe[1]);
  std::sort(keep.begin(), keep.end());
  bool mapped[3] = {false, false, false};
  for (int d : dst)
    if (d <= 2) mapped[d] = true;
  const long open_max = std::min(::sysconf(_SC_OPEN_MAX) > 0 ? ::sysconf(_SC_OPEN_MAX) : 1024L, 1L << 16);
  const pid_t parent = ::getpid();
  const int death_sig = cmd.parent_death_signal;
  const bool group = cmd.new_process_group;

  // Every signal blocked across fork: no handler of the caller's (srun's)
  // runs in the child before the child has put every handler back to its
  // default (as posix_spawn does).
  sigset_t all, caller_mask;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &caller_mask);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    r.error = "cannot run " + name + ": fork: " + std::strerror(e);
    return r;
  }
  if (pid == 0) {
    // The child: async-signal-safe calls only.
    const int w = err_pipe[1];
    auto die = [w](int step) {
      const ChildError ce{step, errno};
      [[maybe_unused]] ssize_t ignored = ::write(w, &ce, sizeof ce);
      ::_exit(127);
    };
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s)
      if (s != SIGKILL && s != SIGSTOP) ::sigaction(s, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (group && ::setpgid(0, 0) != 0) die(kGroup);
    if (death_sig > 0) {
      if (::prctl(PR_SET_PDEATHSIG, death_sig) != 0) die(kParentDeath);
      if (::getppid() != parent) ::_exit(128 + death_sig);  // the parent is already gone
    }
    // Each passed descriptor first above every number in play, then where it
    // belongs: a source that is another's destination is not overwritten.
    for (std::size_t i = 0; i < n; ++i)
      if ((tmp[i] = ::fcntl(src[i], F_DUPFD, high + 1)) < 0) die(kDescriptors);
    if (!mapped[0] || !mapped[1] || !mapped[2]) {
      const int null_fd = ::open("/dev/null", O_RDWR);
      if (null_fd < 0) die(kDevNull);
      for (int k = 0; k < 3; ++k)
        if (!mapped[k] && ::dup2(null_fd, k) < 0) die(kDevNull);
    }
    for (std::size_t i = 0; i < n; ++i)
      if (::dup2(tmp[i], dst[i]) < 0) die(kDescriptors);
    close_from(3, keep.data(), keep.size(), open_max);
    ::execve(path.c_str(), av.data(), envp);
    die(kExec);
  }
  ::pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
  ::close(err_pipe[1]);
  ChildError ce{};
  ssize_t got;
  while ((got = ::read(err_pipe[0], &ce, sizeof ce)) < 0 && errno == EINTR) {
  }
  ::close(err_pipe[0]);
  if (got != static_cast<ssize_t>(sizeof ce)) {  // EOF: the exec succeeded (its group was made before)
    r.pid = pid;
    return r;
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.error = "cannot run " + (path == name ? name : name + " (" + path + ")") + ": " +
            (ce.step == kExec ? std::string(std::strerror(ce.err))
                              : std::string(step_words(ce.step)) + ": " + std::strerror(ce.err));
  return r;
}

}  // namespace scout::common
