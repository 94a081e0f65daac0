// scout-ledgerd's TCP server (see server.hpp).
#include "ledgerd/server.hpp"

#include <memory>

#include <fmt/format.h>

#include "ledgerd/munge_auth.hpp"
#include "libc3/log.hpp"

namespace scout::ledgerd {

namespace asio = boost::asio;
using asio::ip::tcp;
using nlohmann::json;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket s, Server& server)
      : socket_(std::move(s)), server_(server), timer_(server.io_), buf_(kMaxRequestBytes + 2) {
    ++server_.connections_;
    boost::system::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    peer_ = ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
  }
  ~Session() { --server_.connections_; }

  void start() { read(); }

 private:
  void arm_timer() {
    timer_.expires_after(std::chrono::milliseconds(static_cast<long>(server_.limits_.idle_timeout_s * 1000)));
    auto self = shared_from_this();
    timer_.async_wait([this, self](boost::system::error_code ec) {
      if (ec) return;  // cancelled: a request arrived
      boost::system::error_code ignore;
      socket_.close(ignore);
    });
  }

  void read() {
    arm_timer();
    auto self = shared_from_this();
    asio::async_read_until(socket_, buf_, '\n', [this, self](boost::system::error_code ec, std::size_t n) {
      timer_.cancel();
      if (ec == asio::error::not_found) {
        ++server_.refused_["too_large"];
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
      std::string why;
      auto d = munge_decode_credential(line, why);
      if (!d) {
        ++server_.refused_["credential"];
        log::warning("{}: request refused: {}", peer_, why);
        write(json{{"ok", false}, {"refused", "credential"}, {"error", why}}, false);
        return;
      }
      json reply = server_.service_.handle({d->uid, d->gid}, d->payload);
      if (!reply.value("ok", false))
        log::warning("{}: uid {}: request refused ({}): {}", peer_, d->uid, reply.value("refused", "?"),
                     reply.value("error", ""));
      write(reply, false);
    });
  }

  void write(const json& reply, bool close) {
    out_ = reply.dump() + "\n";
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(out_), [this, self, close](boost::system::error_code ec, std::size_t) {
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
  std::string out_, peer_;
};

void listen_on(tcp::acceptor& acceptor, const Endpoint& listen) {
  tcp::resolver resolver(acceptor.get_executor());
  const tcp::endpoint ep = *resolver.resolve(listen.host, std::to_string(listen.port)).begin();
  acceptor.open(ep.protocol());
  acceptor.set_option(tcp::acceptor::reuse_address(true));
  acceptor.bind(ep);
  acceptor.listen();
}

Server::Server(asio::io_context& io, const Endpoint& listen, Service& service, ServerLimits limits)
    : io_(io), acceptor_(io), service_(service), limits_(limits) {
  listen_on(acceptor_, listen);
  accept();
}

void Server::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
    if (!ec) {
      if (connections_ >= limits_.max_connections) {
        ++refused_["busy"];
        const std::string msg = json{{"ok", false}, {"refused", "busy"},
                                     {"error", fmt::format("{} connections open; try again", connections_)}}.dump() + "\n";
        boost::system::error_code ignore;
        asio::write(s, asio::buffer(msg), ignore);
      } else {
        std::make_shared<Session>(std::move(s), *this)->start();
      }
    } else if (ec == asio::error::no_descriptors) {
      // EMFILE: back off instead of spinning on accept.
      log::warning("accept: {}; backing off 100 ms", ec.message());
      auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      t->async_wait([this, t](boost::system::error_code) { accept(); });
      return;
    }
    if (ec != asio::error::operation_aborted) accept();
  });
}

}  // namespace scout::ledgerd
