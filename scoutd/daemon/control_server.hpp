// scoutd's control socket: a Unix-domain stream socket in the job's runtime
// directory, one session per connection, answering only the job's owner or
// root (SO_PEERCRED). Runs its own io_context thread; the providers it calls
// must be thread-safe.
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
  ControlServer(std::string socket_path, ControlProviders providers);
  ~ControlServer();
  void start();  // binds (replacing a stale socket) and starts the thread
  void stop();
  const std::string& path() const noexcept { return path_; }

 private:
  void accept();

  std::string path_;
  ControlProviders providers_;
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::local::stream_protocol::acceptor> acceptor_;
  std::thread thread_;
};

}  // namespace scout::scoutd
