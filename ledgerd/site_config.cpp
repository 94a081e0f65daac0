// The site configuration (see site_config.hpp).
#include "ledgerd/site_config.hpp"

#include <pwd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace scout::ledgerd {

namespace {
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}
std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string x; std::getline(ss, x, ',');)
    if (auto t = trim(x); !t.empty()) out.push_back(t);
  return out;
}
}  // namespace

Endpoint parse_endpoint(const std::string& what, const std::string& value) {
  const auto colon = value.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= value.size())
    throw SiteConfigError(fmt::format("{}: '{}'; expected HOST:PORT, e.g. head1:7411", what, value));
  Endpoint e;
  e.host = value.substr(0, colon);
  char* end = nullptr;
  const long port = std::strtol(value.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 1 || port > 65535)
    throw SiteConfigError(fmt::format("{}: '{}'; expected a port from 1 to 65535 after ':'", what, value));
  e.port = static_cast<int>(port);
  return e;
}

SiteConfig parse_site_config(const std::string& text, const std::string& path) {
  SiteConfig c;
  c.path = path;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (auto h = line.find('#'); h != std::string::npos) line.erase(h);
    line = trim(line);
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      throw SiteConfigError(fmt::format("{}:{}: '{}'; expected key = value", path, n, line));
    const std::string k = trim(line.substr(0, eq)), v = trim(line.substr(eq + 1));
    const std::string where = fmt::format("{}:{}: {}", path, n, k);
    if (k == "ledgerd") c.ledgerd = parse_endpoint(where, v);
    else if (k == "ledgerd_listen") c.listen = parse_endpoint(where, v);
    else if (k == "metrics_listen") c.metrics = parse_endpoint(where, v);
    else if (k == "site_ledger") {
      if (v.empty() || v[0] != '/') throw SiteConfigError(fmt::format("{}: '{}'; expected an absolute path", where, v));
      c.site_ledger = v;
    } else if (k == "admins") c.admins = split_list(v);
    else if (k == "admin_groups") c.admin_groups = split_list(v);
    else if (k == "ledgerd_user") {
      if (v.empty() || v.size() > 64 || v.find_first_of(" \t,") != std::string::npos)
        throw SiteConfigError(fmt::format("{}: '{}'; expected a user name or uid", where, v));
      c.ledgerd_user = v;
    } else
      throw SiteConfigError(fmt::format("{}:{}: unknown key '{}'; expected ledgerd, ledgerd_listen, site_ledger, "
                                        "admins, admin_groups, ledgerd_user or metrics_listen", path, n, k));
  }
  if (c.listen.empty()) c.listen = c.ledgerd;
  return c;
}

uid_t ledgerd_uid(const SiteConfig& c) {
  const std::string& u = c.ledgerd_user;
  if (!u.empty() && u.find_first_not_of("0123456789") == std::string::npos && u.size() <= 9)
    return static_cast<uid_t>(std::stoul(u));
  struct passwd pw {};
  struct passwd* out = nullptr;
  char buf[4096];
  if (getpwnam_r(u.c_str(), &pw, buf, sizeof buf, &out) != 0 || !out)
    throw SiteConfigError(fmt::format("{}: ledgerd_user '{}': no such user", c.path.empty() ? "site configuration" : c.path, u));
  return out->pw_uid;
}

SiteConfig load_site_config() {
  const char* env = std::getenv("SCOUT_CONF");
  const std::string path = env && *env ? env : "/etc/scout/scout.conf";
  std::ifstream in(path);
  if (!in) {
    if (env && *env) throw SiteConfigError(fmt::format("{}: cannot read the site configuration ($SCOUT_CONF)", path));
    SiteConfig c;  // no file: no ledger service configured
    return c;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_site_config(ss.str(), path);
}

}  // namespace scout::ledgerd
