// scout-ledgerd's TCP server (Boost.Asio): one session per connection, one
// request per line (a MUNGE credential whose payload is the JSON request),
// one JSON reply per line. The io thread only reads, writes and times; the
// MUNGE decode and the service's work run on a small worker pool, each
// request with a deadline (a stuck munged, scontrol or SQLite answers that
// client "timed out" and never stalls the others). Bounded against hostile
// clients: the first valid credential must come within first_request_s; a
// connection is closed at its first refused or malformed line, when idle for
// idle_timeout_s, and when a reply cannot be written within write_timeout_s;
// at most max_connections at once and max_per_peer from one address (more
// are told so and closed). Every refused request is logged with who asked.
#pragma once

#include <utility>  // boost 1.74 asio uses std::exchange without including it

#include <boost/asio.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include <boost/asio/thread_pool.hpp>

#include "ledgerd/service.hpp"
#include "ledgerd/site_config.hpp"

namespace scout::ledgerd {

struct ServerLimits {
  double idle_timeout_s = 30;
  int max_connections = 512;
  double first_request_s = 5;    // from connect to the first request line
  double write_timeout_s = 10;   // to write one reply
  double request_timeout_s = 15; // MUNGE decode + the service's work
  int max_per_peer = 128;        // connections from one address
  int workers = 4;
};

// Opens, binds (reuse_address) and listens on `listen` (a host name or
// address), unless systemd passed a listening socket for it (socket
// activation, sd_listen_fds(3): LISTEN_PID is this process and LISTEN_FDS
// exceeds `activation_index`; fd 3 + index is then used as it is, so the
// port stays held by systemd across restarts of the service).
void listen_on(boost::asio::ip::tcp::acceptor& acceptor, const Endpoint& listen, unsigned activation_index);

class Server {
 public:
  Server(boost::asio::io_context& io, const Endpoint& listen, Service& service, ServerLimits limits = {});
  ~Server();
  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  // Requests refused before the service saw them (bad credential, too long,
  // busy, timed out): a copy, taken under the lock.
  std::map<std::string, std::uint64_t> refused() const;
  int connections() const { return connections_; }
  // Runs `work` on the worker pool (never on the io thread).
  void post_work(std::function<void()> work) { boost::asio::post(pool_, std::move(work)); }

 private:
  friend class Session;
  void accept();
  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  Service& service_;
  ServerLimits limits_;
  int connections_ = 0;
  std::map<std::string, int> per_peer_;
  mutable std::mutex refused_mu_;
  std::map<std::string, std::uint64_t> refused_;
  boost::asio::thread_pool pool_;
  void count_refused(const std::string& reason) {
    std::lock_guard<std::mutex> g(refused_mu_);
    ++refused_[reason];
  }
};

}  // namespace scout::ledgerd
