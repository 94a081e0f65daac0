// common/process: starting a long-lived process the way scout-run and the
// SPANK companion do: the descriptors named and no other, /dev/null for the
// rest of 0-2, signals at their defaults and unblocked, its own process
// group, its environment, and a failed exec reported to the caller.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/process.hpp"

using namespace scout::common;

namespace {

struct Ran {
  bool started = false;
  std::string error;
  int code = -1;
  std::string out;
};

// Starts `c` with its stdout on a pipe, reads all of it, reaps the child.
Ran run(Command c) {
  Ran r;
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  c.fds.push_back({1, p[1]});
  const Started s = start(c);
  ::close(p[1]);
  r.started = s.ok();
  r.error = s.error;
  char buf[4096];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<std::size_t>(n));
  ::close(p[0]);
  if (s.ok()) {
    int st = 0;
    REQUIRE(::waitpid(s.pid, &st, 0) == s.pid);
    r.code = exit_code(st);
  }
  return r;
}

Command sh(const std::string& script) {
  Command c;
  c.argv = {"sh", "-c", script};
  return c;
}

}  // namespace

TEST_CASE("start: a program runs with its arguments and its exit status is the caller's to read") {
  auto r = run(sh("echo \"$0|$1\"; exit 3"));
  CHECK(r.started);
  CHECK(r.code == 3);
  Command c = sh("echo \"$0|$1\"");
  c.argv.push_back("x y");  // $0: no shell splits it
  r = run(c);
  CHECK(r.out == "x y|\n");
  // Killed by a signal: 128+N, as a shell says.
  r = run(sh("kill -TERM $$"));
  CHECK(r.code == 128 + SIGTERM);
}

TEST_CASE("start: a program that cannot run is a clear error") {
  auto r = run(Command{{"scout-no-such-program-here"}, {}, {}, true, 0});
  CHECK_FALSE(r.started);
  CHECK(r.error == "cannot run scout-no-such-program-here: not found in PATH");
  r = run(Command{{"/nonexistent/dir/prog"}, {}, {}, true, 0});
  CHECK_FALSE(r.started);
  CHECK(r.error == "cannot run /nonexistent/dir/prog: No such file or directory");
  // In the build tree, not /tmp (which may be mounted noexec).
  const auto dir = std::filesystem::current_path() / ("scout-process-test." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string text = (dir / "not-a-program").string();
  std::ofstream(text) << "just words, no interpreter line\n";
  ::chmod(text.c_str(), 0644);
  r = run(Command{{text}, {}, {}, true, 0});
  CHECK_FALSE(r.started);
  CHECK(r.error == "cannot run " + text + ": Permission denied");
  ::chmod(text.c_str(), 0755);
  r = run(Command{{text}, {}, {}, true, 0});  // execve's ENOEXEC: no shell guesses for us
  CHECK_FALSE(r.started);
  CHECK(r.error == "cannot run " + text + ": Exec format error");
  CHECK(run(Command{{}, {}, {}, true, 0}).error == "no program to run");
  // A descriptor that is not open is refused before anything starts.
  Command bad = sh("true");
  bad.fds.push_back({5, 987654});
  r = run(bad);
  CHECK_FALSE(r.started);
  CHECK(r.error.find("descriptor 987654 for the child's 5 is not open") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("start: only the descriptors named reach the child; 0-2 not named are /dev/null") {
  // No close-on-exec: fork alone would pass it. Far above the 5 passed.
  const int leak = ::fcntl(::open("/dev/null", O_RDONLY), F_DUPFD, 100);
  REQUIRE(leak >= 100);
  int extra[2];
  REQUIRE(::pipe(extra) == 0);
  Command c = sh("test -e /proc/self/fd/" + std::to_string(leak) +
                 " && echo leaked || echo closed; readlink /proc/self/fd/0; readlink /proc/self/fd/2; echo five >&5");
  c.fds.push_back({5, extra[1]});
  const auto r = run(c);
  ::close(extra[1]);
  char buf[64] = {};
  const ssize_t n = ::read(extra[0], buf, sizeof buf - 1);
  ::close(extra[0]);
  ::close(leak);
  CHECK(r.out == "closed\n/dev/null\n/dev/null\n");
  CHECK(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0) == "five\n");
  // One descriptor of the caller's may be two of the child's.
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  Command both = sh("echo out; echo err >&2");
  both.fds = {{1, p[1]}, {2, p[1]}};
  const Started s = start(both);
  REQUIRE(s.ok());
  ::close(p[1]);
  std::string out;
  for (ssize_t k; (k = ::read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(k));
  ::close(p[0]);
  int st = 0;
  ::waitpid(s.pid, &st, 0);
  CHECK(out == "out\nerr\n");
  // Swapped: the caller's 7 is the child's 8 and the caller's 8 the child's 7
  // (each source is another's destination; neither is lost).
  int a[2], b[2];
  REQUIRE(::pipe2(a, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(b, O_CLOEXEC) == 0);
  for (int* end : {&a[0], &a[1], &b[0], &b[1]}) {  // clear of 7 and 8
    const int moved = ::fcntl(*end, F_DUPFD_CLOEXEC, 20);
    ::close(*end);
    *end = moved;
  }
  if (::fcntl(7, F_GETFD) < 0 && ::fcntl(8, F_GETFD) < 0) {
    REQUIRE(::dup2(a[1], 7) == 7);
    REQUIRE(::dup2(b[1], 8) == 8);
    ::close(a[1]);
    ::close(b[1]);
    Command sw = sh("echo seven >&7; echo eight >&8");
    sw.fds = {{8, 7}, {7, 8}};
    const Started w = start(sw);
    INFO(w.error);
    REQUIRE(w.ok());
    ::close(7);
    ::close(8);
    ::waitpid(w.pid, &st, 0);
    auto drain = [&buf](int fd) {
      std::string got;
      for (ssize_t k; (k = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(k));
      ::close(fd);
      return got;
    };
    CHECK(drain(a[0]) == "eight\n");  // a was the caller's 7: the child's 8
    CHECK(drain(b[0]) == "seven\n");
  } else {
    for (int fd : {a[0], a[1], b[0], b[1]}) ::close(fd);
  }
  // A destination past the descriptor limit is refused with the limit named.
  Command far = sh("true");
  far.fds.push_back({1 << 30, 1});
  const Started f = start(far);
  CHECK_FALSE(f.ok());
  CHECK(f.error.find("outside 0..") != std::string::npos);
}

TEST_CASE("start: signals at their defaults and unblocked, its own process group, its own environment") {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigaddset(&block, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &block, &old);  // as srun does
  struct sigaction ign {}, old_hup {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGHUP, &ign, &old_hup);
  Command c;
  c.argv = {"grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status"};
  const auto r = run(c);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  // Signals 32 and 33 are glibc's own (sigaction refuses them): one of them
  // may stay ignored (the sanitizers' runtime ignores 32); every other is
  // at its default.
  REQUIRE(r.out.rfind("SigBlk:\t0000000000000000\nSigIgn:\t", 0) == 0);
  const unsigned long long ignored = std::stoull(r.out.substr(r.out.rfind('\t') + 1), nullptr, 16);
  CHECK((ignored & ~(3ULL << 31)) == 0);

  Command g;
  g.argv = {"sleep", "5"};
  const Started s = start(g);
  REQUIRE(s.ok());
  CHECK(::getpgid(s.pid) == s.pid);
  ::kill(-s.pid, SIGKILL);  // the group is the child's alone
  int st = 0;
  ::waitpid(s.pid, &st, 0);
  CHECK(exit_code(st) == 128 + SIGKILL);
  Command same = g;
  same.new_process_group = false;
  const Started t = start(same);
  REQUIRE(t.ok());
  CHECK(::getpgid(t.pid) == ::getpgid(0));
  ::kill(t.pid, SIGKILL);
  ::waitpid(t.pid, &st, 0);

  Command e = sh("echo \"${SCOUT_T_A-unset}|${HOME-unset}\"");
  e.argv[0] = "/bin/sh";
  e.env = std::vector<std::string>{"SCOUT_T_A=1"};
  CHECK(run(e).out == "1|unset\n");
}
