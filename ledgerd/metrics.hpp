// Prometheus text exposition for the site's monitoring: scout-ledgerd
// serves GET /metrics (HTTP/1.1, Boost.Beast) on metrics_listen. Values:
// verdicts by kind and status, open attributed verdicts and drains per node,
// requests by operation, refused requests by reason, open connections.
// Read-only over the site ledger; any other path is 404. Rendered on the
// server's worker pool (never on the io thread) from a snapshot: the
// service's counters are copied under its lock, the ledger is read through
// a read-only connection of the metrics server's own (WAL: a reader never
// waits for the writer), so a scrape never holds a request up; every query
// reads per-node state kept as data or is one grouped pass (schema 11), none
// repeats work per decision in the history. The accept loop backs off at
// EMFILE. Bind it to loopback or to the
// monitoring network's address (metrics_listen).
#pragma once

#include <utility>  // boost 1.74 asio uses std::exchange without including it

#include <boost/asio.hpp>

#include <mutex>
#include <optional>
#include <string>

#include "ledgerd/server.hpp"
#include "ledgerd/service.hpp"

namespace scout::ledgerd {

// The exposition text (also for the unit test). `reader`: a read-only
// connection to the service's ledger, used without the service's lock; none:
// the service's own connection, under its lock.
std::string render_metrics(Service& service, const Server* server, sql::Ledger* reader = nullptr);

class MetricsServer {
 public:
  MetricsServer(boost::asio::io_context& io, const Endpoint& listen, Service& service, Server& server);
  unsigned short port() const { return acceptor_.local_endpoint().port(); }

 private:
  void accept();
  friend class HttpSession;
  std::string render();  // with reader_, opened on first use
  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  Service& service_;
  Server& server_;
  std::mutex reader_mu_;  // one scrape at a time on reader_
  std::optional<sql::Ledger> reader_;
};

}  // namespace scout::ledgerd
