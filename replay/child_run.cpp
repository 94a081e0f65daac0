// Work in a child process with a deadline (see child_run.hpp).
#include "replay/child_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace scout::replay {

std::optional<std::string> run_in_child(const std::function<std::string()>& fn, double deadline_s,
                                        std::string& error) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return std::nullopt;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      out = fn();
    } catch (...) {
      _exit(3);
    }
    for (std::size_t off = 0; off < out.size();) {
      const ssize_t w = write(fds[1], out.data() + off, out.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) _exit(4);
      off += static_cast<std::size_t>(w);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  bool eof = false, late = false;
  while (!eof) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      late = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    char buf[65536];
    const ssize_t r = read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) eof = true;
    else got.append(buf, static_cast<std::size_t>(r));
  }
  close(fds[0]);
  if (late) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (late) {
    error = "the deadline of " + std::to_string(static_cast<long>(deadline_s)) + " s passed (child killed)";
    return std::nullopt;
  }
  if (WIFSIGNALED(status)) {
    error = std::string("the child died of signal ") + std::to_string(WTERMSIG(status)) + " (" +
            strsignal(WTERMSIG(status)) + ")";
    return std::nullopt;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    error = "the child exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return std::nullopt;
  }
  return got;
}

}  // namespace scout::replay
