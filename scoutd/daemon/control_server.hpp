// scoutd's control socket: a Unix-domain stream socket in the job's runtime
// directory, one session per connection, answering only the job's owner or
// root (SO_PEERCRED). Runs its own io_context thread; the providers it calls
// must be thread-safe. Bounded against hostile clients: at most
// kMaxSessions connections at once (the next one is told "busy" and closed),
// a session idle for kIdleTimeoutS (no complete request, or a reply the
// client does not read) is closed, and accept() backs off for a while after
// EMFILE/ENFILE instead of spinning.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include <utility>  // Boost 1.74 asio uses std::exchange without it

#include <boost/asio.hpp>

#include "scoutd/wire/control_protocol.hpp"

namespace scout::scoutd {

class ControlServer {
 public:
  static constexpr int kMaxSessions = 32;
  static constexpr int kIdleTimeoutS = 30;

  ControlServer(std::string socket_path, ControlProviders providers);
  ~ControlServer();
  void start();  // binds (replacing a stale socket) and starts the thread
  void stop();
  const std::string& path() const noexcept { return path_; }
  void set_idle_timeout_s(int s) noexcept { idle_s_ = s; }  // before start(); tests

 private:
  void accept();
  void accept_later();

  std::string path_;
  ControlProviders providers_;
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::local::stream_protocol::acceptor> acceptor_;
  std::thread thread_;
  std::shared_ptr<int> sessions_ = std::make_shared<int>(0);  // touched by the io thread only
  std::unique_ptr<boost::asio::steady_timer> backoff_;
  int idle_s_ = kIdleTimeoutS;
};

}  // namespace scout::scoutd
