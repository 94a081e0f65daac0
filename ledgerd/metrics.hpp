// Prometheus text exposition for the site's monitoring: scout-ledgerd
// serves GET /metrics (HTTP/1.1, Boost.Beast) on metrics_listen. Values:
// verdicts by kind and status, open attributed verdicts and drains per node,
// requests by operation, refused requests by reason, open connections.
// Read-only over the site ledger; any other path is 404. Rendered on the
// server's worker pool under the service's lock (never on the io thread);
// the accept loop backs off at EMFILE. Bind it to loopback or to the
// monitoring network's address (metrics_listen).
#pragma once

#include <utility>  // boost 1.74 asio uses std::exchange without including it

#include <boost/asio.hpp>

#include <string>

#include "ledgerd/server.hpp"
#include "ledgerd/service.hpp"

namespace scout::ledgerd {

// The exposition text (also for the unit test).
std::string render_metrics(Service& service, const Server* server);

class MetricsServer {
 public:
  MetricsServer(boost::asio::io_context& io, const Endpoint& listen, Service& service, Server& server);
  unsigned short port() const { return acceptor_.local_endpoint().port(); }

 private:
  void accept();
  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  Service& service_;
  Server& server_;
};

}  // namespace scout::ledgerd
