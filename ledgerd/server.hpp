// scout-ledgerd's TCP server (Boost.Asio, one thread): one session per
// connection, one request per line (a MUNGE credential whose payload is the
// JSON request), one JSON reply per line. Bounded: a line longer than
// kMaxRequestBytes is refused and the connection closed; a connection idle
// for the timeout is closed; at most max_connections at once (more are told
// so and closed). Every refused request is logged with who asked.
#pragma once

#include <utility>  // boost 1.74 asio uses std::exchange without including it

#include <boost/asio.hpp>

#include <cstdint>
#include <map>
#include <string>

#include "ledgerd/service.hpp"
#include "ledgerd/site_config.hpp"

namespace scout::ledgerd {

struct ServerLimits {
  double idle_timeout_s = 30;
  int max_connections = 512;
};

// Opens, binds (reuse_address) and listens on `listen` (a host name or address).
void listen_on(boost::asio::ip::tcp::acceptor& acceptor, const Endpoint& listen);

class Server {
 public:
  Server(boost::asio::io_context& io, const Endpoint& listen, Service& service, ServerLimits limits = {});
  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  // Requests refused before the service saw them (bad credential, too long, busy).
  const std::map<std::string, std::uint64_t>& refused() const { return refused_; }
  int connections() const { return connections_; }

 private:
  friend class Session;
  void accept();
  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  Service& service_;
  ServerLimits limits_;
  int connections_ = 0;
  std::map<std::string, std::uint64_t> refused_;
};

}  // namespace scout::ledgerd
