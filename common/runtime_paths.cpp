// Default locations (see runtime_paths.hpp). No libfmt: the SPANK plugin
// compiles this file too, and srun should not load it.
#include "common/runtime_paths.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>


namespace scout::common {

std::string default_ledger_path() {
  if (const char* l = std::getenv("SCOUT_LEDGER"); l && *l) return l;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/scout/ledger.db";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/state/scout/ledger.db";
  return "/tmp/scout-" + std::to_string(getuid()) + "/ledger.db";
}

std::string default_runtime_root() {
  if (const char* r = std::getenv("SCOUT_RUNTIME_DIR"); r && *r) return r;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return std::string(x) + "/scout";
  return "/tmp/scout-" + std::to_string(getuid());
}

std::string job_runtime_dir(const std::string& root, const std::string& job_id) {
  return root + "/" + job_id;
}

std::string control_socket_path(const std::string& job_dir, const std::string& node) {
  return job_dir + "/scoutd." + node + ".sock";
}

bool is_control_socket_name(const std::string& name) {
  return name.size() > 12 && name.rfind("scoutd.", 0) == 0 && name.compare(name.size() - 5, 5, ".sock") == 0;
}

std::vector<std::string> list_control_sockets(const std::string& job_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& ent : std::filesystem::directory_iterator(job_dir, ec))
    if (is_control_socket_name(ent.path().filename().string())) out.push_back(ent.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace scout::common
