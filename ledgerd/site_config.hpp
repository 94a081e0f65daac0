// The site configuration every scout program reads: /etc/scout/scout.conf
// (or $SCOUT_CONF), lines of `key = value`, '#' comments. Keys:
//   ledgerd = HOST:PORT          where clients reach scout-ledgerd
//   ledgerd_listen = ADDR:PORT   where scout-ledgerd listens (default: ledgerd's)
//   site_ledger = PATH           scout-ledgerd's SQLite file (default /var/lib/scout/site.db)
//   admins = USER[,USER...]      administrators (default root and SlurmUser)
//   admin_groups = GROUP[,...]   members are administrators too
//   metrics_listen = ADDR:PORT   Prometheus /metrics (default off)
//   ledgerd_user = USER|UID      the user scout-ledgerd runs as (default root):
//                                clients encode requests that only it can
//                                decode and accept only replies it certified
// An unknown key or a malformed line is an error naming the line.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace scout::ledgerd {

struct SiteConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Endpoint {
  std::string host;
  int port = 0;
  bool empty() const { return host.empty(); }
};

struct SiteConfig {
  std::string path;  // where it was read from ("" if none)
  Endpoint ledgerd, listen, metrics;
  std::string site_ledger = "/var/lib/scout/site.db";
  std::vector<std::string> admins = {"root"};
  std::vector<std::string> admin_groups;
  std::string ledgerd_user = "root";
};

// The uid of ledgerd_user (a name or a decimal uid); throws SiteConfigError
// when no such user exists.
uid_t ledgerd_uid(const SiteConfig& c);

// "host:port" -> Endpoint; throws SiteConfigError naming `what`.
Endpoint parse_endpoint(const std::string& what, const std::string& value);
// Parses text (for tests) or reads the file. A missing file at the default
// path gives the defaults (no ledger service); a missing $SCOUT_CONF is an error.
SiteConfig parse_site_config(const std::string& text, const std::string& path);
SiteConfig load_site_config();

}  // namespace scout::ledgerd
