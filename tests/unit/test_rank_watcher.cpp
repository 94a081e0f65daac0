// RankWatcher on real POSIX shm records the test writes as a hostile job
// would: a record truncated while mapped (SIGBUS), a sequence number that
// cannot be, a communicator entry that overflows. scoutd must keep running
// and show the rank as record_invalid.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "libc3/rank_record.hpp"
#include "scoutd/observe/rank_watcher.hpp"

using namespace scout;

namespace {
struct ShmRecord {
  std::string name;
  int fd = -1;
  c3::RankRecord* rec = nullptr;
  ShmRecord(const std::string& job, int rank, int size) {
    name = c3::record_shm_name(job, "0", rank);
    shm_unlink(name.c_str());
    fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, sizeof(c3::RankRecord)) == 0);
    rec = static_cast<c3::RankRecord*>(mmap(nullptr, sizeof *rec, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    REQUIRE(rec != MAP_FAILED);
    rec->version = c3::kRecordVersion;
    rec->size = sizeof *rec;
    rec->world_rank = rank;
    rec->world_size = size;
    rec->pid = getpid();
    __atomic_store_n(&rec->magic, c3::kRecordMagic, __ATOMIC_RELEASE);
    rec->live.state = c3::kStateInitialized;
  }
  ~ShmRecord() {
    munmap(rec, sizeof *rec);
    close(fd);
    shm_unlink(name.c_str());
  }
};

std::string invalid_of(scoutd::RankWatcher& w, int rank) {
  for (auto& e : w.evidence(false))
    if (e.rank == rank) return e.record_invalid;
  return "(rank not listed)";
}

// Ticks until rank's evidence says record_invalid (the watcher ticks every 20 ms).
std::string wait_invalid(scoutd::RankWatcher& w, int rank) {
  for (int i = 0; i < 200; ++i) {
    std::string why = invalid_of(w, rank);
    if (!why.empty()) return why;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

bool attached(scoutd::RankWatcher& w, int rank) {
  for (int i = 0; i < 200; ++i) {
    for (auto& e : w.evidence(false))
      if (e.rank == rank && e.attached) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}
}  // namespace

TEST_CASE("a record truncated under the reader is reported, not fatal") {
  const std::string job = std::to_string(900000 + getpid() % 1000);
  ShmRecord r0(job, 0, 3), r1(job, 1, 3), r2(job, 2, 3);
  scoutd::RankWatcher w(job, "0", 0, 2, "n1", 0.02);
  w.start();
  REQUIRE(attached(w, 0));
  REQUIRE(attached(w, 1));
  REQUIRE(attached(w, 2));
  // Rank 1's user truncates its record: the next read of the mapping faults.
  REQUIRE(ftruncate(r1.fd, 0) == 0);
  CHECK(wait_invalid(w, 1).find("SIGBUS") != std::string::npos);
  // A sequence number that cannot be (used to spin forever with the lock held).
  c3::record_write_begin(*r2.rec);
  c3::rec_store(r2.rec->live.seq, UINT64_MAX);
  c3::record_write_end(*r2.rec);
  CHECK(wait_invalid(w, 2).find("out of range") != std::string::npos);
  // The healthy rank is still observed: the watcher is alive and answering.
  c3::record_write_begin(*r0.rec);
  c3::rec_store(r0.rec->live.seq, std::uint64_t{3});
  c3::record_write_end(*r0.rec);
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    for (auto& e : w.evidence(false))
      if (e.rank == 0 && e.attached && e.seq == 3) seen = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(seen);
  for (auto& e : w.evidence(false))
    if (e.rank != 0) CHECK_FALSE(e.attached);  // invalid ranks count as unobserved
  w.stop();
}

TEST_CASE("a communicator entry that overflows its members is refused") {
  const std::string job = std::to_string(910000 + getpid() % 1000);
  ShmRecord r0(job, 0, 2);
  auto& ce = r0.rec->comms[0];
  ce.id = 42;
  ce.size = 200;
  ce.stored = 200;  // stored == size > 64: reading members would run off the entry
  __atomic_store_n(&r0.rec->comm_count, std::uint64_t{1}, __ATOMIC_RELEASE);
  scoutd::RankWatcher w(job, "0", 0, 0, "n1", 0.02);
  w.start();
  CHECK(wait_invalid(w, 0).find("at most 64 fit") != std::string::npos);
  w.stop();
}
