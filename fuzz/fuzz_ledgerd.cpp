// libFuzzer target: scout-ledgerd's request handling (Service::handle) on a
// real SQLite ledger, as any user MUNGE certifies could send it. The first
// byte picks who asks (root, the job's user, another user); the rest is the
// request line. The service must answer every request with a JSON object
// and never throw, whatever the payload.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "ledgerd/service.hpp"

using namespace scout;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::optional<sql::Ledger> ledger;
  static std::optional<ledgerd::Service> service;
  static std::uint64_t calls = 0;
  if (!service || ++calls % 5000 == 0) {  // a fresh ledger now and then: bounded growth
    service.reset();
    ledger.reset();
    static const std::string dir = [] {
      char tmpl[] = "/dev/shm/scout-fuzz-ledgerd.XXXXXX";  // tmpfs: fsync costs nothing
      const char* d = mkdtemp(tmpl);
      return std::string(d ? d : "/dev/shm");
    }();
    std::filesystem::remove(dir + "/site.db");
    std::filesystem::remove(dir + "/site.db-wal");
    std::filesystem::remove(dir + "/site.db-shm");
    ledger.emplace(sql::Ledger::open(dir + "/site.db", sql::Ledger::Mode::kReadWrite));
    ledgerd::SiteConfig cfg;
    service.emplace(cfg, *ledger, [](const std::string& job) -> std::optional<ledgerd::JobInfo> {
      if (job == "7") return ledgerd::JobInfo{1000, true, {"n1", "n2", "n3"}};
      if (job == "8") return ledgerd::JobInfo{1000, false, {}};
      return std::nullopt;
    });
  }
  if (size == 0) return 0;
  static const uid_t kWho[] = {0, 1000, 1001};
  ledgerd::Identity who{kWho[data[0] % 3], static_cast<gid_t>(kWho[data[0] % 3])};
  const std::string payload(reinterpret_cast<const char*>(data + 1), size - 1);
  nlohmann::json r = service->handle(who, payload);
  if (!r.is_object() || !r.contains("ok")) __builtin_trap();
  return 0;
}
