// Prometheus metrics of scout-ledgerd (see metrics.hpp).
#include "ledgerd/metrics.hpp"

// Boost 1.74's Beast parser trips GCC 12's -Wmaybe-uninitialized (a false
// positive on boost::optional, worse under the sanitizers); the warning is
// turned off for this file only, not for scout's own code elsewhere.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <map>
#include <memory>

#include <fmt/format.h>

namespace scout::ledgerd {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;

namespace {
std::string label(const std::string& v) {  // escaped for a label value
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}
}  // namespace

std::string render_metrics(Service& service, const Server* server, sql::Ledger* reader) {
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  sql::LedgerMetrics stats;
  std::map<std::string, std::uint64_t> requests, refused;
  std::map<std::string, Service::NodeBacklog> backlogs;
  if (reader) {
    stats = reader->metrics();
  } else {
    auto lk = service.lock();
    stats = service.ledger().metrics();
  }
  requests = service.requests();  // copies under the counters' own lock
  refused = service.refused();
  backlogs = service.backlogs(std::chrono::steady_clock::now());
  family("scout_verdicts", "gauge", "Verdicts in the site ledger, by kind and status.");
  for (auto& [ks, n] : stats.verdicts)
    out += fmt::format("scout_verdicts{{kind=\"{}\",status=\"{}\"}} {}\n", label(ks.first), label(ks.second), n);
  family("scout_open_verdicts", "gauge", "Open attributed verdicts naming a node (since its last clear).");
  for (auto& [node, n] : stats.open_by_node) out += fmt::format("scout_open_verdicts{{node=\"{}\"}} {}\n", label(node), n);
  family("scout_drains_total", "counter", "Drain decisions recorded for a node.");
  for (auto& [node, n] : stats.drains_by_node) out += fmt::format("scout_drains_total{{node=\"{}\"}} {}\n", label(node), n);
  family("scout_node_drained", "gauge",
         "1 while a node's latest decision is a drain or refusal scout applied (0 after a clear, a keep, or a drain "
         "left to another tool's reason).");
  for (auto& [node, d] : stats.drained_now) out += fmt::format("scout_node_drained{{node=\"{}\"}} {}\n", label(node), d ? 1 : 0);
  family("scout_ledgerd_requests_total", "counter", "Requests the service handled, by operation.");
  for (auto& [op, n] : requests) out += fmt::format("scout_ledgerd_requests_total{{op=\"{}\"}} {}\n", label(op), n);
  family("scout_ledgerd_refused_total", "counter", "Requests refused, by reason.");
  if (server)
    for (auto& [r, n] : server->refused()) refused[r] += n;
  for (auto& [r, n] : refused) out += fmt::format("scout_ledgerd_refused_total{{reason=\"{}\"}} {}\n", label(r), n);
  family("scout_forward_backlog_verdicts", "gauge",
         "Verdicts the scoutds of a node committed and have not forwarded to the service yet (their latest report).");
  for (auto& [node, b] : backlogs)
    out += fmt::format("scout_forward_backlog_verdicts{{node=\"{}\"}} {}\n", label(node), b.pending);
  family("scout_forward_backlog_oldest_seconds", "gauge",
         "Age of the oldest verdict a node's scoutds have not forwarded yet; grows between reports.");
  for (auto& [node, b] : backlogs)
    out += fmt::format("scout_forward_backlog_oldest_seconds{{node=\"{}\"}} {:.3f}\n", label(node), b.oldest_s);
  family("scout_ledgerd_connections", "gauge", "Client connections open now.");
  out += fmt::format("scout_ledgerd_connections {}\n", server ? server->connections() : 0);
  return out;
}

std::string MetricsServer::render() {
  std::lock_guard<std::mutex> g(reader_mu_);
  if (!reader_) reader_.emplace(sql::Ledger::open(service_.ledger().path(), sql::Ledger::Mode::kReadOnly));
  return render_metrics(service_, &server_, &*reader_);
}

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket s, MetricsServer& metrics, Server& server)
      : stream_(std::move(s)), metrics_(metrics), server_(server) {}
  void start() {
    stream_.expires_after(std::chrono::seconds(10));
    auto self = shared_from_this();
    http::async_read(stream_, buf_, req_, [this, self](boost::system::error_code ec, std::size_t) {
      if (ec) return;
      res_.version(req_.version());
      res_.keep_alive(false);
      if (req_.method() == http::verb::get && req_.target() == "/metrics") {
        res_.result(http::status::ok);
        res_.set(http::field::content_type, "text/plain; version=0.0.4");
        auto io = stream_.get_executor();
        server_.post_work([this, self, io]() {
          std::string body;
          bool failed = false;
          try {
            body = metrics_.render();
          } catch (const std::exception& e) {
            failed = true;
            body = std::string("metrics: ") + e.what() + "\n";
          }
          asio::post(io, [this, self, body = std::move(body), failed]() mutable {
            if (failed) res_.result(http::status::internal_server_error);
            res_.body() = std::move(body);
            respond();
          });
        });
        return;
      }
      res_.result(http::status::not_found);
      res_.set(http::field::content_type, "text/plain");
      res_.body() = "scout-ledgerd serves GET /metrics only\n";
      respond();
    });
  }

 private:
  void respond() {
    res_.prepare_payload();
    auto self = shared_from_this();
    http::async_write(stream_, res_, [this, self](boost::system::error_code, std::size_t) {
      boost::system::error_code ignore;
      stream_.socket().shutdown(tcp::socket::shutdown_both, ignore);
    });
  }
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buf_;
  http::request<http::string_body> req_;
  http::response<http::string_body> res_;
  MetricsServer& metrics_;
  Server& server_;
};

MetricsServer::MetricsServer(asio::io_context& io, const Endpoint& listen, Service& service, Server& server)
    : io_(io), acceptor_(io), service_(service), server_(server) {
  listen_on(acceptor_, listen, 1);
  accept();
}

void MetricsServer::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
    if (!ec) {
      std::make_shared<HttpSession>(std::move(s), *this, server_)->start();
    } else if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
               ec == asio::error::no_memory) {
      // EMFILE: back off instead of spinning at 100% CPU on accept.
      auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      t->async_wait([this, t](boost::system::error_code) { accept(); });
      return;
    }
    if (ec != asio::error::operation_aborted) accept();
  });
}

}  // namespace scout::ledgerd
