// Default locations (see runtime_paths.hpp).
#include "scoutd/runtime_paths.hpp"

#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

namespace scout::scoutd {

std::string default_ledger_path() {
  if (const char* l = std::getenv("SCOUT_LEDGER"); l && *l) return l;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x)
    return fmt::format("{}/scout/ledger.db", x);
  if (const char* h = std::getenv("HOME"); h && *h)
    return fmt::format("{}/.local/state/scout/ledger.db", h);
  return fmt::format("/tmp/scout-{}/ledger.db", getuid());
}

std::string default_runtime_root() {
  if (const char* r = std::getenv("SCOUT_RUNTIME_DIR"); r && *r) return r;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return fmt::format("{}/scout", x);
  return fmt::format("/tmp/scout-{}", getuid());
}

std::string job_runtime_dir(const std::string& root, const std::string& job_id) {
  return fmt::format("{}/{}", root, job_id);
}

std::string control_socket_path(const std::string& job_dir, const std::string& node) {
  return fmt::format("{}/scoutd.{}.sock", job_dir, node);
}

}  // namespace scout::scoutd
