// scout-ledgerd's TCP server (see server.hpp).
#include "ledgerd/server.hpp"

#include <boost/asio/post.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "ledgerd/munge_auth.hpp"
#include "common/log.hpp"

namespace scout::ledgerd {

namespace asio = boost::asio;
using asio::ip::tcp;
using nlohmann::json;

namespace {
std::chrono::milliseconds ms(double s) { return std::chrono::milliseconds(static_cast<long>(s * 1000)); }
}  // namespace

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket s, Server& server, std::string address)
      : socket_(std::move(s)), server_(server), timer_(server.io_), buf_(kMaxRequestBytes + 2),
        address_(std::move(address)) {
    ++server_.connections_;
    ++server_.per_peer_[address_];
    boost::system::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    peer_ = ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
  }
  ~Session() {
    --server_.connections_;
    if (--server_.per_peer_[address_] <= 0) server_.per_peer_.erase(address_);
  }

  void start() { read(); }

 private:
  // One timer, re-armed for each phase: waiting for a line (the first
  // request, then idle), the worker's answer, and each write.
  enum class Phase { kFirst, kIdle, kRequest, kWrite };
  void arm(Phase phase) {
    const auto& l = server_.limits_;
    timer_.expires_after(ms(phase == Phase::kFirst     ? l.first_request_s
                            : phase == Phase::kIdle    ? l.idle_timeout_s
                            : phase == Phase::kRequest ? l.request_timeout_s
                                                       : l.write_timeout_s));
    auto self = shared_from_this();
    timer_.async_wait([this, self, phase](boost::system::error_code ec) {
      if (ec) return;  // cancelled: the phase ended in time
      if (phase == Phase::kRequest) {
        // The worker did not answer (munged, scontrol or SQLite stuck).
        server_.count_refused("timeout");
        log::warning("{}: request not answered within {:g} s; connection closed", peer_,
                     server_.limits_.request_timeout_s);
        answered_ = true;
        write(json{{"ok", false}, {"refused", "timeout"},
                   {"error", fmt::format("scout-ledgerd could not answer within {:g} s (munged, Slurm or the "
                                         "site ledger is slow); try again", server_.limits_.request_timeout_s)}},
              true);
        return;
      }
      if (phase == Phase::kFirst) server_.count_refused("no_request");
      boost::system::error_code ignore;
      socket_.close(ignore);
    });
  }

  void read() {
    arm(served_ ? Phase::kIdle : Phase::kFirst);
    auto self = shared_from_this();
    asio::async_read_until(socket_, buf_, '\n', [this, self](boost::system::error_code ec, std::size_t n) {
      timer_.cancel();
      if (ec == asio::error::not_found) {
        server_.count_refused("too_large");
        log::warning("{}: request longer than {} bytes refused; connection closed", peer_, kMaxRequestBytes);
        write(json{{"ok", false}, {"refused", "too_large"},
                   {"error", fmt::format("request line longer than {} bytes", kMaxRequestBytes)}},
              true);
        return;
      }
      if (ec) return;  // closed or timed out
      std::string line(asio::buffers_begin(buf_.data()), asio::buffers_begin(buf_.data()) + static_cast<long>(n));
      buf_.consume(n);
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      answered_ = false;
      arm(Phase::kRequest);
      // MUNGE and the service on a worker; the answer comes back to the io
      // thread, unless the deadline answered first.
      asio::post(server_.pool_, [this, self, line = std::move(line)] {
        std::string why;
        auto d = munge_decode_credential(line, why);
        json reply;
        std::string refusal_log, sealed;
        if (!d) {
          reply = json{{"ok", false}, {"refused", "credential"}, {"error", why}};
          refusal_log = fmt::format("{}: request refused: {}", peer_, why);
          server_.count_refused("credential");
        } else {
          reply = server_.service_.handle({d->uid, d->gid}, d->payload);
          if (!reply.value("ok", false))
            refusal_log = fmt::format("{}: uid {}: request refused ({}): {}", peer_, d->uid,
                                      reply.value("refused", "?"), reply.value("error", ""));
          // The reply is the service's MUNGE credential, decodable by the
          // requester alone: a client believes no one else.
          try {
            sealed = munge_encode_payload(reply.dump(), d->uid);
          } catch (const MungeError& e) {
            reply = json{{"ok", false}, {"refused", "internal"}, {"error", std::string("reply: ") + e.what()}};
          }
        }
        const bool ok = reply.value("ok", false);
        asio::post(server_.io_, [this, self, ok, reply = std::move(reply), sealed = std::move(sealed),
                                 refusal_log = std::move(refusal_log)] {
          if (answered_) return;  // the deadline already answered
          answered_ = true;
          timer_.cancel();
          if (!refusal_log.empty()) log::warning("{}", refusal_log);
          if (ok) served_ = true;
          // The first refused line closes the connection: a client that
          // sends garbage, or asks what it may not, holds no slot.
          if (!sealed.empty()) write_line(sealed, !ok);
          else write(reply, true);  // unauthenticated: the client trusts it for nothing
        });
      });
    });
  }

  // A plain JSON line: the server's own refusals, before anyone is known
  // (clients take them as "no answer", never as the service's word).
  void write(const json& reply, bool close) { write_line(reply.dump(), close); }

  void write_line(const std::string& line, bool close) {
    out_ = line + "\n";
    arm(Phase::kWrite);
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(out_), [this, self, close](boost::system::error_code ec, std::size_t) {
      timer_.cancel();
      if (ec || close) {
        boost::system::error_code ignore;
        socket_.shutdown(tcp::socket::shutdown_both, ignore);
        socket_.close(ignore);
        return;
      }
      read();
    });
  }

  tcp::socket socket_;
  Server& server_;
  asio::steady_timer timer_;
  asio::streambuf buf_;
  std::string out_, peer_, address_;
  bool served_ = false;    // a request was answered ok: idle timeout from now on
  bool answered_ = false;  // the current request has its reply (worker or deadline)
};

namespace {
int activated_fd(unsigned index) {
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (!pid || !fds || std::strtol(pid, nullptr, 10) != static_cast<long>(::getpid())) return -1;
  if (index >= std::strtoul(fds, nullptr, 10)) return -1;
  const int fd = 3 + static_cast<int>(index);
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}
}  // namespace

void listen_on(tcp::acceptor& acceptor, const Endpoint& listen, unsigned activation_index) {
  if (const int fd = activated_fd(activation_index); fd >= 0) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0 ||
        (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
      throw std::runtime_error(fmt::format("socket activation: fd {} is not a TCP socket", fd));
    acceptor.assign(ss.ss_family == AF_INET ? tcp::v4() : tcp::v6(), fd);
    log::info("listening on the socket systemd passed (fd {})", fd);
    return;
  }
  tcp::resolver resolver(acceptor.get_executor());
  const tcp::endpoint ep = *resolver.resolve(listen.host, std::to_string(listen.port)).begin();
  acceptor.open(ep.protocol());
  acceptor.set_option(tcp::acceptor::reuse_address(true));
  acceptor.bind(ep);
  acceptor.listen();
}

Server::Server(asio::io_context& io, const Endpoint& listen, Service& service, ServerLimits limits)
    : io_(io), acceptor_(io), service_(service), limits_(limits), pool_(static_cast<std::size_t>(limits.workers)) {
  listen_on(acceptor_, listen, 0);
  accept();
}

Server::~Server() {
  pool_.stop();
  pool_.join();
}

std::map<std::string, std::uint64_t> Server::refused() const {
  std::lock_guard<std::mutex> g(refused_mu_);
  return refused_;
}

void Server::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
    if (!ec) {
      boost::system::error_code aec;
      const auto ep = s.remote_endpoint(aec);
      const std::string address = aec ? std::string("?") : ep.address().to_string();
      const auto it = per_peer_.find(address);
      const int from_peer = it == per_peer_.end() ? 0 : it->second;
      const char* busy = connections_ >= limits_.max_connections ? "busy"
                         : from_peer >= limits_.max_per_peer      ? "busy_peer"
                                                                  : nullptr;
      if (busy) {
        count_refused(busy);
        const std::string msg =
            json{{"ok", false}, {"refused", busy},
                 {"error", std::string(busy) == "busy"
                               ? fmt::format("{} connections open; try again", connections_)
                               : fmt::format("{} connections open from {}; try again", from_peer, address)}}
                .dump() + "\n";
        s.non_blocking(true, aec);
        boost::system::error_code ignore;
        s.write_some(asio::buffer(msg), ignore);  // never blocks the io thread
      } else {
        std::make_shared<Session>(std::move(s), *this, address)->start();
      }
    } else if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
               ec == asio::error::no_memory) {
      // EMFILE/ENFILE/ENOBUFS: back off instead of spinning on accept.
      log::warning("accept: {}; backing off 100 ms", ec.message());
      auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      t->async_wait([this, t](boost::system::error_code) { accept(); });
      return;
    }
    if (ec != asio::error::operation_aborted) accept();
  });
}

}  // namespace scout::ledgerd
