// The control socket under a hostile client of the job's own user: more
// connections than the cap are told "busy" and closed, a client that sends
// nothing is dropped after the idle deadline, and the server keeps
// answering a well-behaved client throughout.
#include <doctest/doctest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "scoutd/daemon/control_server.hpp"

using namespace scout::scoutd;

namespace {
int connect_to(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads until the peer closes or `ms` pass; returns what arrived.
std::string read_some(int fd, int ms, bool* closed = nullptr) {
  std::string out;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    out.append(buf, static_cast<std::size_t>(n));
    if (out.find("OK\n") != std::string::npos || out.find("ERROR") != std::string::npos) break;
  }
  return out;
}

ControlProviders providers() {
  ControlProviders p;
  p.status = [] { return nlohmann::json{{"job", "1"}, {"ranks", nlohmann::json::array()}}; };
  p.verdicts = [] { return nlohmann::json::array(); };
  p.job = "1";
  p.node = "n1";
  return p;
}
}  // namespace

TEST_CASE("control server caps connections and drops idle clients") {
  const std::string path = "/tmp/scout-test-ctl." + std::to_string(getpid());
  ControlServer srv(path, providers());
  srv.set_idle_timeout_s(1);
  srv.start();
  std::vector<int> held;
  for (int i = 0; i < ControlServer::kMaxSessions; ++i) {
    int fd = connect_to(path);
    REQUIRE(fd >= 0);
    held.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the server accept them
  int extra = connect_to(path);
  REQUIRE(extra >= 0);
  std::string busy = read_some(extra, 2000);
  CHECK(busy.find("ERROR: busy") != std::string::npos);
  close(extra);
  // The idle deadline frees the held sessions; a polite client is served.
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));
  for (int fd : held) {
    bool closed = false;
    read_some(fd, 200, &closed);
    CHECK(closed);
    close(fd);
  }
  int good = connect_to(path);
  REQUIRE(good >= 0);
  const std::string hello = "HELLO " + std::to_string(kProtocolVersion) + "\n";
  REQUIRE(write(good, hello.data(), hello.size()) == static_cast<ssize_t>(hello.size()));
  CHECK(read_some(good, 2000).find("SCOUTD") != std::string::npos);
  const char req[] = "STATUS\n";
  REQUIRE(write(good, req, sizeof req - 1) == static_cast<ssize_t>(sizeof req - 1));
  std::string rep = read_some(good, 2000);
  CHECK(rep.find("job 1") != std::string::npos);
  CHECK(rep.find("OK\n") != std::string::npos);
  close(good);
  srv.stop();
}
