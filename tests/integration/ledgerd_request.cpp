// Test driver: sends JSON requests to scout-ledgerd (from $SCOUT_CONF) with
// the caller's MUNGE credential, one client and so one kept connection for
// all of them, and prints each reply; exit 0 if the service said ok to the
// last, 1 if it refused, 2 if it could not be reached. `--wait-for FILE`
// between two requests waits until FILE exists (a test restarts the
// service meanwhile). Lets a test act as any user with setpriv, e.g. to
// submit for another user's job.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "ledgerd/client.hpp"
#include "ledgerd/site_config.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ledgerd_request JSON [--wait-for FILE JSON]...\n");
    return 2;
  }
  int rc = 2;
  try {
    auto site = scout::ledgerd::load_site_config();
    scout::ledgerd::LedgerdClient c(site, 10);
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--wait-for") == 0 && i + 1 < argc) {
        const std::string file = argv[++i];
        for (int n = 0; access(file.c_str(), F_OK) != 0; ++n) {
          if (n == 600) {
            std::fprintf(stderr, "ledgerd_request: %s did not appear in 60 s\n", file.c_str());
            return 2;
          }
          usleep(100000);
        }
        continue;
      }
      auto r = c.request(nlohmann::json::parse(argv[i]));
      std::puts(r.dump().c_str());
      std::fflush(stdout);
      rc = r.value("ok", false) ? 0 : 1;
    }
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ledgerd_request: %s\n", e.what());
    return 2;
  }
}
