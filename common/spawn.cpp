// Running another program (see spawn.hpp).
#include "common/spawn.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

extern char** environ;

namespace scout::common {

SpawnResult run_command(const std::vector<std::string>& argv, double timeout_s, std::size_t max_out) {
  SpawnResult r;
  if (argv.empty()) {
    r.error = "no program to run";
    return r;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.error = fmt::format("{}: pipe: {}", argv[0], std::strerror(errno));
    return r;
  }
  std::vector<char*> av;
  for (auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t dfl;
  sigemptyset(&dfl);
  sigaddset(&dfl, SIGPIPE);
  sigaddset(&dfl, SIGCHLD);
  posix_spawnattr_setsigdefault(&attr, &dfl);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = argv[0].find('/') == std::string::npos ? posix_spawnp(&pid, av[0], &fa, &attr, av.data(), environ)
                                                        : posix_spawn(&pid, av[0], &fa, &attr, av.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    r.error = fmt::format("{}: cannot run: {}", argv[0], std::strerror(rc));
    return r;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[8192];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;  // the deadline is checked above
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF (or an error): the program closed its output
    if (r.out.size() < max_out) r.out.append(buf, std::min(static_cast<std::size_t>(got), max_out - r.out.size()));
  }
  ::close(fds[0]);
  if (r.timed_out) ::kill(pid, SIGKILL);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
  if (r.timed_out) r.error = fmt::format("{}: no answer in {:g} s; killed", argv[0], timeout_s);
  else if (r.status == 127) r.error = fmt::format("{}: not found or cannot run", argv[0]);
  else if (r.status != 0) r.error = fmt::format("{} exited with status {}", argv[0], r.status);
  return r;
}

}  // namespace scout::common
