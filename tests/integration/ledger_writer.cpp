// The ledger's verdict commits, as scoutd makes them (sql::Ledger, the same
// insert path), for the crash-consistency test and the durability benchmark.
//   ledger_writer write PATH JOB START N   commit verdicts START..START+N-1,
//       printing "committed K" after each commit returns (then fflush)
//   ledger_writer bench PATH N             cost per verdict: this ledger
//       (synchronous=FULL) vs the same inserts with synchronous=NORMAL
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "sql/ledger.hpp"

using namespace scout::sql;

namespace {
VerdictRow row(const std::string& job, long k) {
  VerdictRow v;
  v.job_id = job;
  v.step = "0";
  v.kind = "stall";
  v.status = "attributed";
  v.ranks = "[1]";
  v.hosts = "[\"n1\"]";
  v.evidence = "{\"rule\":\"crash-consistency test\"}";
  v.detected_at = "2026-12-01T00:00:00.000Z";
  v.vkey = job + ".0.o0.1." + std::to_string(k);
  return v;
}

double per_verdict_ms(const std::string& path, long n, bool normal) {
  std::filesystem::remove(path);
  auto l = Ledger::open(path, Ledger::Mode::kReadWrite);
  l.insert_job_if_missing({.job_id = "1", .user = "b", .uid = 0, .launcher = "bench"});
  if (normal) {
    // The baseline: the same ledger file and inserts, synchronous=NORMAL
    // (a commit is durable only at the next WAL checkpoint).
    sqlite3* raw = nullptr;
    sqlite3_open(path.c_str(), &raw);
    sqlite3_exec(raw, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
    sqlite3_busy_timeout(raw, 10000);
    const auto t0 = std::chrono::steady_clock::now();
    for (long k = 0; k < n; ++k) {
      const std::string sql = "INSERT INTO verdicts(job_id,step,kind,status,ranks,hosts,evidence,detected_at,vkey) "
                              "VALUES('1','0','stall','attributed','[1]','[\"n1\"]','{}','t','1.0.o0.1." +
                              std::to_string(k) + "')";
      sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    sqlite3_close(raw);
    return ms / n;
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (long k = 0; k < n; ++k) l.insert_verdict(row("1", k));
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / n;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "write" && argc == 6) {
      const std::string job = argv[3];
      const long start = std::atol(argv[4]), n = std::atol(argv[5]);
      auto l = Ledger::open(argv[2], Ledger::Mode::kReadWrite);
      l.insert_job_if_missing({.job_id = job, .user = "t", .uid = 0, .launcher = "test"});
      for (long k = start; k < start + n; ++k) {
        l.insert_verdict(row(job, k));
        std::printf("committed %ld\n", k);
        std::fflush(stdout);
      }
      return 0;
    }
    if (mode == "bench" && argc == 4) {
      const long n = std::atol(argv[3]);
      const double full = per_verdict_ms(argv[2], n, false), normal = per_verdict_ms(argv[2], n, true);
      std::printf("%-34s %12s\n", "verdict commit (one per transaction)", "ms/verdict");
      std::printf("%-34s %12.3f\n", "ledger, synchronous=FULL", full);
      std::printf("%-34s %12.3f\n", "baseline, synchronous=NORMAL", normal);
      std::printf("ratio FULL/NORMAL: %.2fx (%ld verdicts each, %s)\n", full / normal, n, argv[2]);
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ledger_writer: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: ledger_writer write PATH JOB START N | bench PATH N\n");
  return 2;
}
