// What scout-ledgerd's server starts from (see server.hpp): its limits,
// checked once, and its listening sockets, systemd's where it passed them
// (socket activation) or its own.
#include "ledgerd/server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "common/log.hpp"

namespace scout::ledgerd {

namespace asio = boost::asio;
using asio::ip::tcp;

ServerLimits effective_limits(ServerLimits l) {
  if (l.max_connections < 1)
    throw SiteConfigError(fmt::format("--max-connections {}; expected at least 1", l.max_connections));
  if (l.max_unauthenticated <= 0) l.max_unauthenticated = std::max(1, l.max_connections / 4);
  if (l.max_unauthenticated > l.max_connections)
    throw SiteConfigError(fmt::format("--max-unauthenticated {} exceeds --max-connections {}; expected at most it "
                                      "(a quarter of it by default)", l.max_unauthenticated, l.max_connections));
  if (l.max_unauthenticated_per_peer < 1)
    throw SiteConfigError(fmt::format("--max-unauthenticated-per-peer {}; expected at least 1",
                                      l.max_unauthenticated_per_peer));
  l.max_unauthenticated_per_peer = std::min(l.max_unauthenticated_per_peer, l.max_unauthenticated);
  if (l.max_per_peer < 1) throw SiteConfigError(fmt::format("--max-per-peer {}; expected at least 1", l.max_per_peer));
  if (l.max_reply_bytes == 0 || l.max_reply_bytes > kMaxReplyBytes) l.max_reply_bytes = kMaxReplyBytes;
  if (l.workers < 1) throw SiteConfigError(fmt::format("--workers {}; expected at least 1", l.workers));
  return l;
}

namespace {
// sd_listen_fds(3): how many sockets systemd passed to this process.
int activated_count() {
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (!pid || !fds || std::strtol(pid, nullptr, 10) != static_cast<long>(::getpid())) return 0;
  const long n = std::strtol(fds, nullptr, 10);
  return n > 0 && n < 1024 ? static_cast<int>(n) : 0;
}
std::set<int>& claimed_fds() {  // main thread, at start
  static std::set<int> claimed;
  return claimed;
}
std::optional<tcp::endpoint> bound_to(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  int type = 0;
  socklen_t tlen = sizeof type;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0 ||
      ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 || type != SOCK_STREAM)
    return std::nullopt;
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    return tcp::endpoint(asio::ip::address_v4(ntohl(in->sin_addr.s_addr)), ntohs(in->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    asio::ip::address_v6::bytes_type b;
    std::copy(std::begin(in6->sin6_addr.s6_addr), std::end(in6->sin6_addr.s6_addr), b.begin());
    return tcp::endpoint(asio::ip::address_v6(b, in6->sin6_scope_id), ntohs(in6->sin6_port));
  }
  return std::nullopt;
}
asio::ip::address plain(const asio::ip::address& a) {  // ::ffff:a.b.c.d as a.b.c.d
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  return a;
}
// Whether a passed socket bound to `have` is the one for `want` (resolved:
// the configured host's addresses; empty when it did not resolve).
bool serves(const tcp::endpoint& have, const Endpoint& want, const std::vector<asio::ip::address>& resolved) {
  if (have.port() != want.port) return false;
  if (resolved.empty()) return true;
  const bool want_any = std::any_of(resolved.begin(), resolved.end(), [](auto& a) { return a.is_unspecified(); });
  if (have.address().is_unspecified()) return true;
  if (want_any) return false;  // all addresses asked for, one given
  return std::any_of(resolved.begin(), resolved.end(),
                     [&](auto& a) { return plain(a) == plain(have.address()); });
}
std::string describe(const tcp::endpoint& e) {
  return e.address().is_v6() ? fmt::format("[{}]:{}", e.address().to_string(), e.port())
                             : fmt::format("{}:{}", e.address().to_string(), e.port());
}
}  // namespace

void listen_on(tcp::acceptor& acceptor, const Endpoint& listen, unsigned activation_index) {
  if (const int n = activated_count(); n > 0) {
    boost::system::error_code rec;
    std::vector<asio::ip::address> resolved;
    tcp::resolver resolver(acceptor.get_executor());
    for (auto& r : resolver.resolve(listen.host, std::to_string(listen.port), rec))
      resolved.push_back(r.endpoint().address());
    std::vector<int> order;
    if (activation_index < static_cast<unsigned>(n)) order.push_back(3 + static_cast<int>(activation_index));
    for (int i = 0; i < n; ++i)
      if (static_cast<unsigned>(i) != activation_index) order.push_back(3 + i);
    std::vector<std::string> passed;
    for (const int fd : order) {
      if (claimed_fds().count(fd)) continue;
      const auto ep = bound_to(fd);
      if (!ep) continue;
      passed.push_back(fmt::format("fd {} {}", fd, describe(*ep)));
      if (!serves(*ep, listen, resolved)) continue;
      claimed_fds().insert(fd);
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);
      acceptor.assign(ep->protocol(), fd);
      log::info("listening on {} (fd {}, passed by systemd) for {}:{}", describe(*ep), fd, listen.host, listen.port);
      return;
    }
    log::warning("socket activation: none of the sockets systemd passed ({}) is bound to {}:{}; binding it here "
                 "(set the same address in scout-ledgerd.socket's ListenStream=)",
                 passed.empty() ? std::string("each taken by another listener")
                                : fmt::format("{}", fmt::join(passed, ", ")),
                 listen.host, listen.port);
  }
  tcp::resolver resolver(acceptor.get_executor());
  const tcp::endpoint ep = *resolver.resolve(listen.host, std::to_string(listen.port)).begin();
  acceptor.open(ep.protocol());
  acceptor.set_option(tcp::acceptor::reuse_address(true));
  acceptor.bind(ep);
  acceptor.listen();
}

void close_unclaimed_activation_sockets() {
  const int n = activated_count();
  for (int fd = 3; fd < 3 + n; ++fd) {
    if (claimed_fds().count(fd)) continue;
    const auto ep = bound_to(fd);
    log::warning("socket activation: systemd passed fd {} ({}), which no configured address uses "
                 "(ledgerd_listen, metrics_listen); closed here, the port stays held by scout-ledgerd.socket",
                 fd, ep ? describe(*ep) : std::string("not a TCP socket"));
    claimed_fds().insert(fd);
    ::close(fd);
  }
}

}  // namespace scout::ledgerd
