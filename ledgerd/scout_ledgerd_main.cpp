// scout-ledgerd: the site ledger service on the head node. One root-owned
// SQLite site ledger (WAL, synchronous=FULL); every request is authenticated
// by MUNGE and authorised by who MUNGE says is asking (see service.hpp).
// main() reads as init calls and their fini in reverse; SIGINT/SIGTERM stop
// the io_context (signal_set), nothing else runs in a handler. At the end
// the Server goes first (it closes its sessions and joins its workers),
// then the metrics server, then the io_context with what its handlers still
// hold, then the service and the ledger the workers used.
#include <utility>  // boost 1.74 asio uses std::exchange without including it

#include <boost/asio.hpp>

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "ledgerd/metrics.hpp"
#include "ledgerd/server.hpp"
#include "ledgerd/service.hpp"
#include "ledgerd/site_config.hpp"
#include "common/log.hpp"
#include "common/options.hpp"
#include "sql/ledger.hpp"

int main(int argc, char** argv) {
  namespace ld = scout::ledgerd;
  scout::log::init("scout-ledgerd", {});
  std::string listen, ledger, scontrol = "scontrol", conf;
  ld::ServerLimits limits;
  bool print_config = false;
  scout::opts::Table t("scout-ledgerd", "scout-ledgerd [OPTIONS]",
                       "The scout site ledger service: verdicts of every job, node health decisions;\n"
                       "MUNGE-authenticated requests over TCP (see scout-ledgerd(8)).");
  t.text("config", "FILE", conf, "site configuration (default $SCOUT_CONF or /etc/scout/scout.conf)");
  t.text("listen", "ADDR:PORT", listen, "where to listen (default: ledgerd_listen or ledgerd of the config)");
  t.text("ledger", "PATH", ledger, "the site ledger (default: site_ledger of the config)");
  t.text("scontrol", "PATH", scontrol, "scontrol, to learn a job's user and state");
  t.seconds("idle-timeout", limits.idle_timeout_s, 1, 3600, "close a connection idle this long");
  t.seconds("first-request-timeout", limits.first_request_s, 0.1, 600,
            "close a connection whose first request line has not come by then");
  t.seconds("request-timeout", limits.request_timeout_s, 1, 600,
            "answer \"timed out\" when MUNGE, Slurm or the ledger take longer for one request");
  t.integer("max-connections", "N", limits.max_connections, 1, 100000, "connections at once");
  t.integer("max-per-peer", "N", limits.max_per_peer, 1, 100000,
            "authenticated connections kept at once from one address");
  t.integer("max-unauthenticated", "N", limits.max_unauthenticated, 0, 100000,
            "connections without a valid credential yet, in all (0: a quarter of --max-connections); "
            "a newcomer beyond it closes the oldest silent one");
  t.integer("max-unauthenticated-per-peer", "N", limits.max_unauthenticated_per_peer, 1, 100000,
            "connections without a valid credential yet from one address");
  t.integer("workers", "N", limits.workers, 1, 64, "threads that decode credentials and answer requests");
  t.flag("print-config", print_config, "print the effective configuration and exit");
  ld::SiteConfig cfg;
  try {
    if (t.parse(argc, argv) == scout::opts::Table::Outcome::kPrinted) return 0;
    if (!conf.empty()) setenv("SCOUT_CONF", conf.c_str(), 1);
    cfg = ld::load_site_config();
    if (!listen.empty()) cfg.listen = ld::parse_endpoint("--listen", listen);
    if (!ledger.empty()) cfg.site_ledger = ledger;
    limits = ld::effective_limits(limits);
    if (cfg.listen.empty())
      throw ld::SiteConfigError(fmt::format("no address to listen on; expected ledgerd_listen or ledgerd in {} "
                                            "or --listen", cfg.path.empty() ? "/etc/scout/scout.conf" : cfg.path));
  } catch (const std::exception& e) {
    scout::log::error("config: {}", e.what());
    return 2;
  }
  if (print_config) {
    std::printf("config = %s\nlisten = %s:%d\nsite_ledger = %s\nadmins = %s\n", cfg.path.c_str(),
                cfg.listen.host.c_str(), cfg.listen.port, cfg.site_ledger.c_str(),
                fmt::format("{}", fmt::join(cfg.admins, ",")).c_str());
    const std::string metrics_at =
        cfg.metrics.empty() ? std::string("off") : fmt::format("{}:{}", cfg.metrics.host, cfg.metrics.port);
    std::printf("metrics_listen = %s\nmax_connections = %d\nmax_per_peer = %d\nmax_unauthenticated = %d\n"
                "max_unauthenticated_per_peer = %d\nworkers = %d\n", metrics_at.c_str(),
                limits.max_connections, limits.max_per_peer, limits.max_unauthenticated,
                limits.max_unauthenticated_per_peer, limits.workers);
    return 0;
  }
  scout::log::init("scout-ledgerd", {false, true, true});
  try {
    auto site = scout::sql::Ledger::open(cfg.site_ledger, scout::sql::Ledger::Mode::kReadWrite);
    site.set_durable();
    ld::Service service(cfg, site, ld::slurm_oracle(scontrol));
    boost::asio::io_context io;
    // Declared before the Server, so destroyed after it: ~Server joins the
    // worker pool, where a scrape may still be rendering with the metrics
    // server's own ledger reader.
    std::unique_ptr<ld::MetricsServer> metrics;
    ld::Server server(io, cfg.listen, service, limits);
    if (!cfg.metrics.empty()) {
      metrics = std::make_unique<ld::MetricsServer>(io, cfg.metrics, service, server);
      scout::log::info("metrics on http://{}:{}/metrics", cfg.metrics.host, metrics->port());
    }
    ld::close_unclaimed_activation_sockets();
    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](boost::system::error_code, int sig) {
      scout::log::info("signal {}: stopping", sig);
      io.stop();
    });
    scout::log::info("listening on {}:{}, site ledger {}", cfg.listen.host, server.port(), cfg.site_ledger);
    io.run();
  } catch (const std::exception& e) {
    scout::log::error("{}", e.what());
    return 1;
  }
  return 0;
}
