// scout-ledgerd under load: K clients (threads, one connection each) submit
// one verdict per request (a MUNGE credential is encoded and decoded for
// every one) to a running scout-ledgerd; prints submissions per second and
// the latency percentiles, next to the baseline measured in the same run:
// the same inserts straight into a local SQLite ledger file (WAL,
// synchronous=FULL), as the epilog writes today.
//   ledgerd_bench JOB CLIENTS REQUESTS_PER_CLIENT LOCAL_LEDGER_PATH
// (SCOUT_CONF names the service; run as root or an administrator.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "ledgerd/client.hpp"
#include "ledgerd/site_config.hpp"
#include "sql/ledger.hpp"

using Clock = std::chrono::steady_clock;

namespace {
nlohmann::json verdict(const std::string& job, int client, int i) {
  return {{"vkey", fmt::format("{}.0.o{}.1.{}", job, client, i)}, {"step", "0"}, {"kind", "straggler"},
          {"status", "attributed"}, {"ranks", {client}}, {"hosts", {fmt::format("n{}", client % 64 + 1)}},
          {"evidence", {{"rule", "bench"}, {"score", 1.5}}}, {"detected_at", "2026-12-01T00:00:00.000Z"}};
}
double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: ledgerd_bench JOB CLIENTS REQUESTS_PER_CLIENT LOCAL_LEDGER\n");
    return 2;
  }
  const std::string job = argv[1];
  const int clients = std::atoi(argv[2]), per = std::atoi(argv[3]);
  const auto site = scout::ledgerd::load_site_config();
  std::vector<std::vector<double>> lat(static_cast<std::size_t>(clients));
  std::vector<int> errors(static_cast<std::size_t>(clients), 0);
  const auto t0 = Clock::now();
  std::vector<std::thread> th;
  for (int c = 0; c < clients; ++c)
    th.emplace_back([&, c] {
      scout::ledgerd::LedgerdClient cl(site, 30);
      for (int i = 0; i < per; ++i) {
        const auto a = Clock::now();
        try {
          auto r = cl.request({{"op", "submit"}, {"job", job}, {"verdicts", {verdict(job, c, i)}}});
          if (!r.value("ok", false)) {
            if (++errors[static_cast<std::size_t>(c)] == 1)
              std::fprintf(stderr, "ledgerd_bench: client %d: refused: %s\n", c, r.value("error", "?").c_str());
          }
        } catch (const std::exception& e) {
          if (++errors[static_cast<std::size_t>(c)] == 1) std::fprintf(stderr, "ledgerd_bench: client %d: %s\n", c, e.what());
        }
        lat[static_cast<std::size_t>(c)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
      }
    });
  for (auto& t : th) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> all;
  int errs = 0;
  for (std::size_t c = 0; c < lat.size(); ++c) {
    all.insert(all.end(), lat[c].begin(), lat[c].end());
    errs += errors[c];
  }
  const double n = static_cast<double>(all.size());
  // Baseline: the same rows into a local file, one transaction each.
  auto local = scout::sql::Ledger::open(argv[4], scout::sql::Ledger::Mode::kReadWrite);
  local.set_durable();
  local.insert_job_if_missing({.job_id = job, .user = "bench", .uid = 0, .launcher = "bench"});
  std::vector<double> base;
  const int local_n = std::min(clients * per, 2000);
  const auto b0 = Clock::now();
  for (int i = 0; i < local_n; ++i) {
    auto v = verdict(job, i % 64, i);
    scout::sql::VerdictRow row;
    row.job_id = job;
    row.step = "0";
    row.kind = "straggler";
    row.status = "attributed";
    row.ranks = v["ranks"].dump();
    row.hosts = v["hosts"].dump();
    row.evidence = v["evidence"].dump();
    row.detected_at = v["detected_at"];
    row.vkey = v["vkey"].get<std::string>();
    const auto a = Clock::now();
    local.import_verdict(row, "bench", 0);
    base.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
  }
  const double bsecs = std::chrono::duration<double>(Clock::now() - b0).count();
  std::printf("%-44s %12s %10s %10s %10s\n", "", "submits/s", "p50 ms", "p99 ms", "errors");
  std::printf("%-44s %12.0f %10.2f %10.2f %10d\n", fmt::format("scout-ledgerd, {} clients x {} (MUNGE)", clients, per).c_str(),
              n / secs, pct(all, 0.5), pct(all, 0.99), errs);
  std::printf("%-44s %12.0f %10.2f %10.2f %10d\n", "baseline: local SQLite file, synchronous=FULL",
              local_n / bsecs, pct(base, 0.5), pct(base, 0.99), 0);
  std::printf("ratio (service / local file throughput): %.2f\n", (n / secs) / (local_n / bsecs));
  std::printf("service_p99_ms %.3f\n", pct(all, 0.99));
  return errs == 0 ? 0 : 1;
}
