// scout-ledgerd's TCP server (Boost.Asio): one session per connection, one
// request per line (a MUNGE credential whose payload is the JSON request),
// one JSON reply per line. The io thread only reads, writes and times; the
// MUNGE decode and the service's work run on a small worker pool, each
// request with a deadline (a stuck munged, scontrol or SQLite answers that
// client "timed out" and never stalls the others). Bounded against hostile
// clients: the first valid credential must come within first_request_s; a
// connection is closed at its first refused or malformed line, when idle for
// idle_timeout_s, and when a reply cannot be written within write_timeout_s.
// Connections that have not sent a valid credential yet are a pool of their
// own, well below max_connections (max_unauthenticated in all,
// max_unauthenticated_per_peer from one address): a newcomer beyond either
// pushes out the oldest silent one, so no one who re-opens silent
// connections can starve a client that sends its request. Authenticated
// connections are kept up to max_per_peer from one address and the rest of
// max_connections in all; beyond that a request is still answered and its
// connection then closed. A reply is never larger than max_reply_bytes
// (below MUNGE's 1 MiB payload limit): a larger one is refused as
// too_large_reply. Every refusal and eviction is counted by a fixed reason.
#pragma once

#include <utility>  // boost 1.74 asio uses std::exchange without including it

#include <boost/asio.hpp>

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/thread_pool.hpp>

#include "ledgerd/munge_auth.hpp"
#include "ledgerd/service.hpp"
#include "ledgerd/site_config.hpp"

namespace scout::ledgerd {

// One reply's JSON at most: MUNGE refuses payloads over 1 MiB, and the
// credential's own header must fit beside it.
inline constexpr std::size_t kMaxReplyBytes = 900 * 1024;

struct ServerLimits {
  double idle_timeout_s = 30;
  int max_connections = 512;     // every connection, authenticated or not
  double first_request_s = 5;    // from connect to the first request line
  double write_timeout_s = 10;   // to write one reply
  double request_timeout_s = 15; // MUNGE decode + the service's work
  int max_per_peer = 128;        // authenticated connections kept from one address
  // Connections without a valid credential yet: in all (0: max_connections
  // / 4) and from one address. A newcomer beyond either closes the oldest
  // one that has not sent a line ("unauthenticated_evicted"); when every
  // one of them has (its request is being answered), it is refused
  // ("unauthenticated_full").
  int max_unauthenticated = 0;
  int max_unauthenticated_per_peer = 8;
  std::size_t max_reply_bytes = kMaxReplyBytes;  // at most kMaxReplyBytes
  int workers = 4;
};

// The limits as the server applies them (max_unauthenticated filled in);
// throws SiteConfigError naming the option when they contradict each other.
ServerLimits effective_limits(ServerLimits limits);

// How a request line is opened (the certified uid, gid and payload, or why
// not) and a reply sealed for the requester: MUNGE in production; the unit
// tests pass a stand-in. Called on the worker pool; may block.
struct ServerCredentials {
  std::function<std::optional<Decoded>(const std::string& line, std::string& why)> open;
  std::function<std::string(const std::string& payload, uid_t requester)> seal;
  static ServerCredentials munge();
};

// Opens, binds (reuse_address) and listens on `listen` (a host name or
// address), unless systemd passed a listening socket bound to it (socket
// activation, sd_listen_fds(3): LISTEN_PID is this process, fds 3 to
// 3 + LISTEN_FDS - 1). A passed socket is taken when it is bound to the
// same port and to the same address, or to a wildcard one (a configured
// wildcard takes only a wildcard). The socket at `activation_index` (the
// position of its ListenStream= line in scout-ledgerd.socket: 0 the
// service's port, 1 the metrics port) is tried first, then the others, so
// the unit's order does not matter; none bound to `listen` is a warning,
// and the address is bound here.
void listen_on(boost::asio::ip::tcp::acceptor& acceptor, const Endpoint& listen, unsigned activation_index);

// The sockets systemd passed that no listen_on() took (the metrics port of
// the shipped unit while metrics_listen is unset, a port the configuration
// no longer names): each named in a warning and closed in this process.
void close_unclaimed_activation_sockets();

class Session;

class Server {
 public:
  // Destroy it on the io thread, or once `io` no longer runs: it closes
  // every session, then joins the worker pool.
  Server(boost::asio::io_context& io, const Endpoint& listen, Service& service, ServerLimits limits = {},
         ServerCredentials credentials = ServerCredentials::munge());
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  // Requests refused and connections closed before the service saw them
  // (bad credential, too long, evicted, busy, timed out): a copy, taken
  // under the lock.
  std::map<std::string, std::uint64_t> refused() const;
  int connections() const;  // open now (any thread)
  // Runs `work` on the worker pool (never on the io thread).
  void post_work(std::function<void()> work) { boost::asio::post(pool_, std::move(work)); }

 private:
  friend class Session;
  // What the sessions share with the server, held by every session: a
  // session can outlive the Server (its handlers are destroyed with the
  // io_context, after the Server), and then touches only this.
  struct Shared;
  void accept();
  void admit(boost::asio::ip::tcp::socket s);
  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<Shared> shared_;
  // Last: destroyed (after the destructor joined it) before what its
  // abandoned tasks release.
  boost::asio::thread_pool pool_;
};

}  // namespace scout::ledgerd
