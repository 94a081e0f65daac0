// Test driver: sends one JSON request to scout-ledgerd (from $SCOUT_CONF)
// with the caller's MUNGE credential and prints the reply; exit 0 if the
// service said ok, 1 if it refused, 2 if it could not be reached. Lets a
// test act as any user with setpriv, e.g. to submit for another user's job.
#include <cstdio>

#include "ledgerd/client.hpp"
#include "ledgerd/site_config.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ledgerd_request JSON\n");
    return 2;
  }
  try {
    auto site = scout::ledgerd::load_site_config();
    scout::ledgerd::LedgerdClient c(site, 10);
    auto r = c.request(nlohmann::json::parse(argv[1]));
    std::puts(r.dump().c_str());
    return r.value("ok", false) ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ledgerd_request: %s\n", e.what());
    return 2;
  }
}
