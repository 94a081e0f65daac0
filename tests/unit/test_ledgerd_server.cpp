// scout-ledgerd's TCP server in-process (issue 34): connection slots under
// attack, replies over the bound, shutdown with requests in flight, socket
// activation.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "tests/unit/ledgerd_test_site.hpp"

using namespace scout::ledgerd;
using nlohmann::json;
using ledgerd_test::Site;
using ledgerd_test::stall;

// --- the server itself, in-process (issue 34) --------------------------------
// The real Server on 127.0.0.1 with a stand-in for MUNGE (a request line is
// "UID:PAYLOAD", and that uid is certified; a reply is sealed as
// "SEALED:" + payload), clients on plain sockets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "ledgerd/server.hpp"

namespace {
// `open_delay` stands for a slow munged; the largest payload sealed is kept
// in `largest_sealed`.
ServerCredentials fake_munge(std::chrono::milliseconds open_delay = std::chrono::milliseconds(0),
                             std::atomic<std::size_t>* largest_sealed = nullptr) {
  ServerCredentials c;
  c.open = [open_delay](const std::string& line, std::string& why) -> std::optional<scout::ledgerd::Decoded> {
    if (open_delay.count() > 0) std::this_thread::sleep_for(open_delay);
    const auto colon = line.find(':');
    if (colon == std::string::npos || colon == 0 || colon > 9 ||
        line.find_first_not_of("0123456789") != colon) {
      why = "not a credential";
      return std::nullopt;
    }
    scout::ledgerd::Decoded d;
    d.uid = d.gid = static_cast<uid_t>(std::stoul(line.substr(0, colon)));
    d.payload = line.substr(colon + 1);
    return d;
  };
  c.seal = [largest_sealed](const std::string& payload, uid_t) {
    if (largest_sealed) {
      std::size_t seen = largest_sealed->load();
      while (payload.size() > seen && !largest_sealed->compare_exchange_weak(seen, payload.size())) {
      }
    }
    return "SEALED:" + payload;
  };
  return c;
}

// The Server and a thread running its io_context; stopped as scout-ledgerd
// stops: the io_context stopped, the Server destroyed, then the io_context.
// The Server is on the heap, so that a use after it is freed shows under
// the sanitizers.
struct LiveServer {
  boost::asio::io_context io;
  std::unique_ptr<Server> server;
  std::thread thread;
  LiveServer(Service& service, ServerLimits limits, ServerCredentials credentials) {
    server = std::make_unique<Server>(io, Endpoint{"127.0.0.1", 0}, service, limits, std::move(credentials));
    thread = std::thread([this] { io.run(); });
  }
  ~LiveServer() { stop(); }
  void stop() {
    io.stop();
    if (thread.joinable()) thread.join();
    server.reset();
  }
  std::uint64_t refused(const char* reason) const {
    const auto r = server->refused();
    const auto it = r.find(reason);
    return it == r.end() ? 0 : it->second;
  }
};

// A client connection, from a given loopback address if asked.
class Conn {
 public:
  Conn(unsigned short port, const char* from = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    if (from) {
      ::inet_pton(AF_INET, from, &a.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        drop();
        return;
      }
    }
    a.sin_port = htons(port);
    ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) drop();
  }
  Conn(Conn&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Conn& operator=(Conn&&) = delete;
  ~Conn() { drop(); }
  bool ok() const { return fd_ >= 0; }
  // Sends `line` and returns the reply line ("" if none came in 5 s).
  std::string ask(const std::string& line) {
    const std::string out = line + "\n";
    if (::send(fd_, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) return {};
    return read_line();
  }
  std::string read_line() {
    std::string in;
    char c;
    while (::recv(fd_, &c, 1, 0) == 1) {
      if (c == '\n') return in;
      in += c;
    }
    return {};
  }

 private:
  void drop() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

bool loopback_alias(const char* address) {  // 127.0.0.2 and up: Linux routes all of 127/8 to lo
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, address, &a.sin_addr);
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

template <class F>
bool eventually(F done) {  // within 20 s
  for (int i = 0; i < 4000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

bool root_pinged(const std::string& reply) {
  if (reply.rfind("SEALED:", 0) != 0) return false;
  const json j = json::parse(reply.substr(7));
  return j.value("ok", false) && j.value("role", "") == "root";
}
}  // namespace

TEST_CASE("server limits: the unauthenticated pool defaults to a quarter of the connections; contradictions refused") {
  const auto l = effective_limits({});
  CHECK(l.max_unauthenticated == 128);
  CHECK(l.max_unauthenticated_per_peer == 8);
  CHECK(l.max_reply_bytes == kMaxReplyBytes);
  ServerLimits bad;
  bad.max_connections = 16;
  bad.max_unauthenticated = 17;
  CHECK_THROWS_WITH_AS(effective_limits(bad), doctest::Contains("--max-unauthenticated 17"), SiteConfigError);
}

// Before: one pool of max_connections (here 64) and max_per_peer (16) per
// address for every connection. 16 silent or authenticated connections from
// each of four addresses held all 64 slots (from 127.0.0.1 alone, its 16),
// and root's connection was told busy (busy_peer): its ping failed.
TEST_CASE("attack: connections held from every address, silent or authenticated, never keep root's request out") {
  rlimit fds{};
  ::getrlimit(RLIMIT_NOFILE, &fds);
  if (fds.rlim_cur < 2048 && fds.rlim_max > fds.rlim_cur) {
    fds.rlim_cur = std::min<rlim_t>(2048, fds.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &fds);
  }
  Site s;
  ServerLimits lim;
  lim.max_connections = 64;
  lim.max_per_peer = 16;
  lim.max_unauthenticated = 16;
  lim.max_unauthenticated_per_peer = 4;
  lim.first_request_s = 60;  // the attack's connections stay for the whole test
  lim.idle_timeout_s = 60;
  LiveServer live(*s.service, lim, fake_munge());
  const unsigned short port = live.server->port();
  const std::string root_ping = R"(0:{"v":2,"op":"ping","nonce":"00aa"})";

  // The control: root's ping through the real server.
  {
    Conn c(port);
    REQUIRE(c.ok());
    CHECK(root_pinged(c.ask(root_ping)));
  }
  REQUIRE(eventually([&] { return live.server->connections() == 0; }));

  // The attacker's addresses: root's own, and three more where the
  // loopback network allows.
  std::vector<std::string> from = {"127.0.0.1"};
  for (const char* a : {"127.0.0.2", "127.0.0.3", "127.0.0.4"})
    if (loopback_alias(a)) from.push_back(a);
  const int addresses = static_cast<int>(from.size());
  std::vector<Conn> held;

  // 1. Any user has a valid credential: it keeps every authenticated
  // connection it may, 16 from each address. Each request is answered; what
  // is over the bounds is closed after its reply.
  for (auto& a : from)
    for (int i = 0; i < 16; ++i) {
      Conn c(port, a.c_str());
      REQUIRE(c.ok());
      CHECK(c.ask(R"(1000:{"v":2,"op":"ping"})").rfind("SEALED:", 0) == 0);
      held.push_back(std::move(c));
    }
  const int kept = std::min(16 * addresses, 64 - 16);
  REQUIRE(eventually([&] { return live.server->connections() == kept; }));
  CHECK(live.refused("busy") == static_cast<std::uint64_t>(16 * addresses - kept));

  // 2. Then 600 silent connections over the same addresses, all held open:
  // each newcomer beyond an address's 4 pushes out that address's oldest.
  const std::size_t first_silent = held.size();
  for (int i = 0; i < 600; ++i) {
    Conn c(port, from[static_cast<std::size_t>(i % addresses)].c_str());
    REQUIRE(c.ok());
    held.push_back(std::move(c));
  }
  const int silent = std::min(4 * addresses, 16);
  REQUIRE(eventually([&] {
    return live.refused("unauthenticated_evicted") + static_cast<std::uint64_t>(live.server->connections() - kept) ==
           600;
  }));
  CHECK(live.server->connections() == kept + silent);
  CHECK(live.refused("unauthenticated_evicted") == static_cast<std::uint64_t>(600 - silent));
  // The first silent one was told why it was closed.
  CHECK(held[first_silent].read_line().find("\"refused\":\"unauthenticated_evicted\"") != std::string::npos);

  // 3. Root's ping, from the attacker's own address, gets through: it takes
  // the place of the oldest silent connection there, and is answered even
  // though no authenticated slot is left for it.
  Conn root(port, "127.0.0.1");
  REQUIRE(root.ok());
  CHECK(root_pinged(root.ask(root_ping)));
  CHECK(live.refused("unauthenticated_evicted") == static_cast<std::uint64_t>(600 - silent + 1));
  CHECK(live.server->connections() <= 64);
  // And again: every time.
  for (int i = 0; i < 10; ++i) {
    Conn again(port, "127.0.0.1");
    CHECK(root_pinged(again.ask(root_ping)));
  }
}

TEST_CASE("a reply over the bound is refused as too_large_reply, sealed with the nonce; it is never sealed whole") {
  Site s;
  s.jobs["18"] = {1000, true, {"n1"}};
  // Every reply comes in pages, but a page holds at least one row whole: a
  // decision written to the ledger directly (not through the service, which
  // cuts reasons to kMaxReasonBytes: an older scout, a manual insert) makes
  // one page over the bound.
  s.ledger->insert_gating({"17", "n7", "keep", std::string(kMaxReplyBytes + 1000, 'r'), "t", "", "{}"});
  REQUIRE(s.ask(0, {{"op", "node"}, {"node", "n7"}}).dump().size() > kMaxReplyBytes);
  auto small = stall("18.0.o0.9.1");
  small["hosts"] = {"n1"};
  REQUIRE(s.ask(0, {{"op", "submit"}, {"job", "18"}, {"verdicts", {small}}})["ok"] == true);

  std::atomic<std::size_t> largest{0};
  LiveServer live(*s.service, {}, fake_munge(std::chrono::milliseconds(0), &largest));
  Conn c(live.server->port());
  REQUIRE(c.ok());
  const std::string r = c.ask(R"(0:{"v":2,"op":"node","node":"n7","nonce":"0a0b"})");
  REQUIRE(r.rfind("SEALED:", 0) == 0);
  CHECK(r.size() < 4096);
  const json j = json::parse(r.substr(7));
  CHECK(j["ok"] == false);
  CHECK(j["refused"] == "too_large_reply");
  CHECK(j["nonce"] == "0a0b");
  CHECK(j["error"].get<std::string>().find("ask for less") != std::string::npos);
  CHECK(live.refused("too_large_reply") == 1);
  CHECK(largest.load() <= kMaxReplyBytes);
  // A reply under the bound is sent whole.
  Conn c2(live.server->port());
  const std::string r2 = c2.ask(R"(0:{"v":2,"op":"query","job":"18","nonce":"0c0d"})");
  REQUIRE(r2.rfind("SEALED:", 0) == 0);
  const json j2 = json::parse(r2.substr(7));
  CHECK(j2["ok"] == true);
  CHECK(j2["verdicts"].size() == 1);
}

// Before: a worker still answering a timed-out request was joined by
// ~Server, and posted its answer, holding the session, to the stopped
// io_context; open sessions' handlers waited there too. They were destroyed
// with the io_context, after the Server, and ~Session then decremented the
// Server's freed counters and erased from its freed per-address map: a use
// after free and a double free of the map's node (ASan: heap-use-after-free).
TEST_CASE("shutdown: the server destroyed while a timed-out request's worker runs and sessions are open") {
  Site s;
  ServerLimits lim;
  lim.request_timeout_s = 0.1;
  lim.first_request_s = 60;
  {
    LiveServer live(*s.service, lim, fake_munge(std::chrono::milliseconds(1500)));
    const unsigned short port = live.server->port();
    Conn slow(port);
    REQUIRE(slow.ok());
    const std::string r = slow.ask(R"(0:{"v":2,"op":"ping"})");
    CHECK(r.find("\"refused\":\"timeout\"") != std::string::npos);
    Conn silent(port);
    REQUIRE(silent.ok());
    Conn second(port);  // a second request, timed out too, still in a worker at shutdown
    REQUIRE(second.ok());
    CHECK(second.ask(R"(0:{"v":2,"op":"ping"})").find("\"refused\":\"timeout\"") != std::string::npos);
    REQUIRE(eventually([&] { return live.server->connections() >= 1; }));
    live.stop();  // the workers finish now, into a stopped io_context
  }  // the io_context goes, with the sessions its handlers held
  CHECK(s.service->requests().at("ping") == 2);  // both workers answered after their deadline
}

// scout-ledgerd.socket passes the service's port and the metrics port; each
// listener takes the socket bound to its own address, so an edited unit
// that lists them in another order still works. In a child process: the
// passed sockets must be fds 3 and 4.
#include <fcntl.h>
#include <sys/wait.h>

TEST_CASE("socket activation: each listener takes the passed socket bound to its address, whatever the order") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 0;
    try {
      auto listening = [](const char* address) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        const int one = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        ::inet_pton(AF_INET, address, &a.sin_addr);
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 8) != 0) _exit(10);
        return ::fcntl(fd, F_DUPFD, 100);  // out of the way of 3 and 4
      };
      auto port_of = [](int fd) {
        sockaddr_in a{};
        socklen_t len = sizeof a;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        return static_cast<int>(ntohs(a.sin_port));
      };
      const int service_fd = listening("0.0.0.0"), metrics_fd = listening("127.0.0.1");
      // The unit lists the metrics port first: fd 3 is its socket, fd 4 the service's.
      if (::dup2(metrics_fd, 3) != 3 || ::dup2(service_fd, 4) != 4) _exit(11);
      ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
      ::setenv("LISTEN_FDS", "2", 1);
      boost::asio::io_context io;
      boost::asio::ip::tcp::acceptor service(io), metrics(io), elsewhere(io);
      listen_on(service, {"127.0.0.1", port_of(4)}, 0);  // the wildcard socket serves 127.0.0.1 too
      if (service.native_handle() != 4) code = 1;
      listen_on(metrics, {"127.0.0.1", port_of(3)}, 1);
      if (metrics.native_handle() != 3) code = 2;
      listen_on(elsewhere, {"127.0.0.1", 0}, 1);  // no passed socket for it: bound here
      if (elsewhere.native_handle() == 3 || elsewhere.native_handle() == 4) code = 3;
      close_unclaimed_activation_sockets();  // none left: both were taken
      if (::fcntl(3, F_GETFD) < 0 || ::fcntl(4, F_GETFD) < 0) code = 4;
    } catch (...) {
      code = 9;
    }
    _exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
