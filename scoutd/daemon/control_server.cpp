// Control socket server (see control_server.hpp).
#include "scoutd/daemon/control_server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <istream>

#include <fmt/format.h>

namespace scout::scoutd {

namespace asio = boost::asio;
using asio::local::stream_protocol;

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(stream_protocol::socket s, const ControlProviders& p)
      : socket_(std::move(s)), providers_(p), buf_(kMaxLineBytes + 2) {}

  void start() { read(); }

 private:
  void read() {
    auto self = shared_from_this();
    asio::async_read_until(socket_, buf_, '\n', [this, self](boost::system::error_code ec, std::size_t n) {
      if (ec == asio::error::not_found) {
        // No newline within the limit: say so once, then discard the rest
        // of that line as it arrives (memory stays bounded) and go on.
        buf_.consume(buf_.size());
        if (!discarding_) {
          discarding_ = true;
          reply({fmt::format("ERROR: line too long; expected at most {} bytes\n", kMaxLineBytes), false});
        } else {
          read();
        }
        return;
      }
      if (ec) return;  // client went away
      std::string line(asio::buffers_begin(buf_.data()), asio::buffers_begin(buf_.data()) + static_cast<long>(n));
      buf_.consume(n);
      if (discarding_) {  // the tail of an oversized line
        discarding_ = false;
        read();
        return;
      }
      if (!line.empty() && line.back() == '\n') line.pop_back();
      ControlReply r;
      try {
        r = handle_control_line(state_, line, providers_);
      } catch (const std::exception& e) {
        r = {fmt::format("ERROR: internal: {}\n", e.what()), false};
      }
      reply(std::move(r));
    });
  }

  void reply(ControlReply r) {
    auto self = shared_from_this();
    out_ = std::move(r.text);
    bool close = r.close;
    asio::async_write(socket_, asio::buffer(out_), [this, self, close](boost::system::error_code ec, std::size_t) {
      if (ec || close) {
        boost::system::error_code ignore;
        socket_.shutdown(stream_protocol::socket::shutdown_both, ignore);
        return;
      }
      read();
    });
  }

  stream_protocol::socket socket_;
  const ControlProviders& providers_;
  asio::streambuf buf_;
  ControlState state_;
  std::string out_;
  bool discarding_ = false;
};

}  // namespace

ControlServer::ControlServer(std::string socket_path, ControlProviders providers)
    : path_(std::move(socket_path)), providers_(std::move(providers)) {}

ControlServer::~ControlServer() { stop(); }

void ControlServer::start() {
  ::unlink(path_.c_str());  // a stale socket from a dead scoutd of the same job
  acceptor_ = std::make_unique<stream_protocol::acceptor>(io_, stream_protocol::endpoint(path_));
  ::chmod(path_.c_str(), 0600);
  accept();
  thread_ = std::thread([this] { io_.run(); });
}

void ControlServer::stop() {
  if (!thread_.joinable()) return;
  io_.stop();
  thread_.join();
  ::unlink(path_.c_str());
}

void ControlServer::accept() {
  acceptor_->async_accept([this](boost::system::error_code ec, stream_protocol::socket s) {
    if (!ec) {
      ucred cred{};
      socklen_t len = sizeof cred;
      bool allowed = getsockopt(s.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
                     (cred.uid == 0 || cred.uid == geteuid());
      if (allowed) {
        std::make_shared<Session>(std::move(s), providers_)->start();
      } else {
        std::string msg = fmt::format("ERROR: permission denied: uid {} is neither the job's owner "
                                      "(uid {}) nor root\n", cred.uid, geteuid());
        boost::system::error_code ignore;
        asio::write(s, asio::buffer(msg), ignore);
      }
    }
    if (ec != asio::error::operation_aborted) accept();
  });
}

}  // namespace scout::scoutd
