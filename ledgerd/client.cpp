// scout-ledgerd client (see client.hpp).
#include "ledgerd/client.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "common/untrusted_json.hpp"
#include "common/untrusted_text.hpp"
#include "ledgerd/munge_auth.hpp"
#include "ledgerd/service.hpp"

namespace scout::ledgerd {

LedgerdClient::LedgerdClient(Endpoint server, uid_t service_uid, double timeout_s)
    : server_(std::move(server)), service_uid_(service_uid), timeout_s_(timeout_s) {}

namespace {
uid_t service_uid_of(const SiteConfig& site) {
  try {
    return ledgerd_uid(site);
  } catch (const SiteConfigError& e) {
    throw LedgerdError(e.what());
  }
}
}  // namespace

LedgerdClient::LedgerdClient(const SiteConfig& site, double timeout_s)
    : LedgerdClient(site.ledgerd, service_uid_of(site), timeout_s) {}

LedgerdClient::~LedgerdClient() {
  if (fd_ >= 0) ::close(fd_);
}

void LedgerdClient::connect() {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(server_.host.c_str(), std::to_string(server_.port).c_str(), &hints, &res);
  if (rc != 0) throw LedgerdError(fmt::format("ledgerd {}:{}: {}", server_.host, server_.port, gai_strerror(rc)));
  std::string why = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (::poll(&p, 1, static_cast<int>(timeout_s_ * 1000)) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      why = err ? std::strerror(err) : "connect timed out";
      ::close(fd);
      continue;
    }
    fd_ = fd;
    break;
  }
  freeaddrinfo(res);
  if (fd_ < 0) throw LedgerdError(fmt::format("ledgerd {}:{}: {}", server_.host, server_.port, why));
}

nlohmann::json LedgerdClient::open_reply(const std::string& reply, const std::string& nonce) {
  // Whatever happens, a refused or unreadable reply ends the connection
  // (the service closes it after a refusal): the next request connects anew.
  auto drop = [&] {
    ::close(fd_);
    fd_ = -1;
    pending_.clear();
  };
  std::string why;
  if (!reply.empty() && reply.front() == '{') {
    // The server's own refusal (bad credential, busy, timed out): not
    // certified by anyone, so it is an error and never the service's word.
    drop();
    auto j = common::parse_untrusted(reply, common::kRequestLimits, &why);
    std::string msg = j && j->is_object() && j->contains("error") && (*j)["error"].is_string()
                          ? common::printable_text((*j)["error"].get_ref<const std::string&>(), 300)
                          : "unreadable";
    throw LedgerdError(fmt::format("ledgerd {}:{}: unauthenticated reply: {}", server_.host, server_.port, msg));
  }
  auto d = munge_decode_credential(reply, why);
  if (!d) {
    drop();
    throw LedgerdError(fmt::format("ledgerd {}:{}: reply refused: {}", server_.host, server_.port, why));
  }
  if (d->uid != service_uid_) {
    drop();
    throw LedgerdError(fmt::format("ledgerd {}:{}: reply certified for uid {}, not for the service's uid {} "
                                   "(ledgerd_user); refused", server_.host, server_.port, d->uid, service_uid_));
  }
  auto j = common::parse_untrusted(d->payload, common::kReplyLimits, &why);
  if (!j || !j->is_object()) {
    drop();
    throw LedgerdError("ledgerd: malformed reply: " + (j ? std::string("not an object") : why));
  }
  if (!j->contains("nonce") || !(*j)["nonce"].is_string() || (*j)["nonce"].get<std::string>() != nonce) {
    drop();
    throw LedgerdError("ledgerd: the reply does not answer this request (nonce); refused");
  }
  j->erase("nonce");
  if (!j->value("ok", false)) drop();
  return std::move(*j);
}

nlohmann::json LedgerdClient::request(nlohmann::json req) {
  if (server_.empty())
    throw LedgerdError("no ledger service configured (ledgerd = HOST:PORT in /etc/scout/scout.conf or $SCOUT_CONF)");
  req["v"] = kProtocolVersion;
  unsigned char raw[16];
  if (getrandom(raw, sizeof raw, 0) != static_cast<ssize_t>(sizeof raw))
    throw LedgerdError(fmt::format("ledgerd: getrandom: {}", std::strerror(errno)));
  std::string nonce;
  for (unsigned char b : raw) nonce += fmt::format("{:02x}", b);
  req["nonce"] = nonce;
  std::string line;
  try {
    // Repaired, not refused: what root's epilog forwards comes from a spool
    // ledger the job's user wrote, and one stray byte in a row must not
    // keep the rest from the service (which refuses ill-formed UTF-8).
    line = munge_encode_payload(common::dump_repairing_utf8(req), service_uid_) + "\n";
  } catch (const MungeError& e) {
    throw LedgerdError(e.what());
  }
  // A kept connection the service closed meanwhile (idle deadline, restart)
  // reads as end of file before anything is sent; bytes already waiting are
  // a late reply to a request that timed out. Either way it is not used:
  // the request goes out on a new connection, so it is sent once.
  if (fd_ >= 0) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) != 0) {  // readable (end of file, bytes, an error) or poll failed
      ::close(fd_);
      fd_ = -1;
      pending_.clear();
    }
  }
  if (fd_ < 0) connect();
  try {
    return exchange(line, nonce);
  } catch (const LedgerdError&) {
    // What failed on the way leaves the connection in an unknown state (a
    // reply may still come): never used again.
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    pending_.clear();
    throw;
  }
}

nlohmann::json LedgerdClient::exchange(const std::string& line, const std::string& nonce) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  auto left_ms = [&] {
    return static_cast<int>(std::max<long>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count()));
  };
  std::size_t off = 0;
  while (off < line.size()) {
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, left_ms()) != 1) throw LedgerdError("ledgerd: send timed out");
    const ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN) throw LedgerdError(fmt::format("ledgerd: send: {}", std::strerror(errno)));
    if (n > 0) off += static_cast<std::size_t>(n);
  }
  for (;;) {
    if (auto nl = pending_.find('\n'); nl != std::string::npos) {
      const std::string reply = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return open_reply(reply, nonce);
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, left_ms()) != 1) throw LedgerdError("ledgerd: no reply in time");
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n == 0) throw LedgerdError("ledgerd: connection closed");
    if (n < 0 && errno != EAGAIN) throw LedgerdError(fmt::format("ledgerd: recv: {}", std::strerror(errno)));
    if (n > 0) pending_.append(buf, static_cast<std::size_t>(n));
    if (pending_.size() > (std::size_t{64} << 20)) throw LedgerdError("ledgerd: reply too large");
  }
}

}  // namespace scout::ledgerd
