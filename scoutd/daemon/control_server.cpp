// Control socket server (see control_server.hpp).
#include "scoutd/daemon/control_server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <istream>

#include <fmt/format.h>

namespace scout::scoutd {

namespace asio = boost::asio;
using asio::local::stream_protocol;

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(stream_protocol::socket s, const ControlProviders& p, std::shared_ptr<int> count, int idle_s, long uid)
      : socket_(std::move(s)), providers_(p), buf_(kMaxLineBytes + 2), timer_(socket_.get_executor()),
        count_(std::move(count)), idle_s_(idle_s) {
    ++*count_;
    state_.uid = uid;
  }
  ~Session() { --*count_; }

  void start() { read(); }

 private:
  // Every wait for the client (a request, or the client reading our reply)
  // runs under one idle deadline; when it passes, the socket is closed and
  // the pending operation ends with an error, which ends the session.
  void arm() {
    timer_.expires_after(std::chrono::seconds(idle_s_));
    std::weak_ptr<Session> weak = shared_from_this();
    timer_.async_wait([weak](boost::system::error_code ec) {
      if (ec) return;  // re-armed or cancelled
      if (auto self = weak.lock()) {
        boost::system::error_code ignore;
        self->socket_.close(ignore);
      }
    });
  }

  void read() {
    auto self = shared_from_this();
    arm();
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
    arm();
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
  asio::steady_timer timer_;
  std::shared_ptr<int> count_;
  int idle_s_;
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
    if (ec == asio::error::operation_aborted) return;
    if (ec == asio::error::no_descriptors || ec.value() == ENFILE) {
      // Out of descriptors: accepting again at once would spin. Wait, and
      // let sessions end (their idle deadline closes them) in the meantime.
      accept_later();
      return;
    }
    if (!ec) {
      ucred cred{};
      socklen_t len = sizeof cred;
      bool allowed = getsockopt(s.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
                     (cred.uid == 0 || cred.uid == geteuid());
      boost::system::error_code ignore;
      if (!allowed) {
        std::string msg = fmt::format("ERROR: permission denied: uid {} is neither the job's owner "
                                      "(uid {}) nor root\n", cred.uid, geteuid());
        s.non_blocking(true, ignore);  // a client that does not read cannot hold us
        asio::write(s, asio::buffer(msg), ignore);
      } else if (*sessions_ >= kMaxSessions) {
        std::string msg = fmt::format("ERROR: busy: {} control connections are open (at most {}); try again\n",
                                      *sessions_, kMaxSessions);
        s.non_blocking(true, ignore);
        asio::write(s, asio::buffer(msg), ignore);
      } else {
        std::make_shared<Session>(std::move(s), providers_, sessions_, idle_s_, static_cast<long>(cred.uid))->start();
      }
    }
    accept();
  });
}

void ControlServer::accept_later() {
  if (!backoff_) backoff_ = std::make_unique<asio::steady_timer>(io_);
  backoff_->expires_after(std::chrono::milliseconds(200));
  backoff_->async_wait([this](boost::system::error_code ec) {
    if (!ec) accept();
  });
}

}  // namespace scout::scoutd
