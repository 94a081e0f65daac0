// A site ledger service for tests: a temporary ledger, a Service over it
// with a stand-in for Slurm's job records (`jobs`: the uid a job belongs
// to, whether it runs, its nodes), and a verdict to submit.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "ledgerd/service.hpp"

namespace ledgerd_test {
using namespace scout::ledgerd;
using nlohmann::json;
namespace fs = std::filesystem;

struct Site {
  fs::path dir;
  std::optional<scout::sql::Ledger> ledger;
  std::map<std::string, JobInfo> jobs;
  std::optional<Service> service;
  Site() {
    char tmpl[] = "/tmp/scout-ledgerd-test-XXXXXX";
    dir = mkdtemp(tmpl);
    ledger.emplace(scout::sql::Ledger::open((dir / "site.db").string(), scout::sql::Ledger::Mode::kReadWrite));
    restart_service();
  }
  // A new Service over the same ledger, as after a restart (nothing cached).
  void restart_service() {
    SiteConfig cfg;
    cfg.admins = {"root"};
    service.emplace(cfg, *ledger, [this](const std::string& j) -> std::optional<JobInfo> {
      auto it = jobs.find(j);
      if (it == jobs.end()) return std::nullopt;
      return it->second;
    });
  }
  ~Site() { fs::remove_all(dir); }
  json ask(uid_t uid, json req) {
    if (!req.contains("v")) req["v"] = kProtocolVersion;
    return service->handle({uid, uid}, req.dump());
  }
};

inline json stall(const std::string& vkey) {
  return {{"vkey", vkey}, {"step", "0"}, {"kind", "stall"}, {"status", "attributed"}, {"ranks", {4}},
          {"hosts", {"n3"}}, {"evidence", {{"rule", "behind"}}}, {"detected_at", "2026-12-01T00:00:00.000Z"}};
}

}  // namespace ledgerd_test
