// RankWatcher on real POSIX shm records the test writes as a hostile job
// would: a record truncated while mapped (SIGBUS), a sequence number that
// cannot be, a communicator entry that overflows. scoutd must keep running
// and show the rank as record_invalid.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "libc3/rank_record.hpp"
#include "scoutd/observe/rank_watcher.hpp"

using namespace scout;

namespace {
// A record as a probe writes it: version 6 by default, or version 5 (an
// older probe, still read).
struct ShmRecord {
  std::string name;
  int fd = -1;
  std::size_t len = 0;
  c3::RankRecord* rec = nullptr;
  c3::RecordV6* v6 = nullptr;
  ShmRecord(const std::string& job, int rank, int size, bool old = false, bool threaded = false, bool dirs = false,
            bool tags = false) {
    name = c3::record_shm_name(job, "0", rank);
    shm_unlink(name.c_str());
    fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    REQUIRE(fd >= 0);
    len = old        ? sizeof(c3::RankRecord)
          : threaded ? sizeof(c3::RecordV8)
          : tags     ? sizeof(c3::RecordV10)
          : dirs     ? sizeof(c3::RecordV9)
                     : sizeof(c3::RecordV6);
    REQUIRE(ftruncate(fd, static_cast<off_t>(len)) == 0);
    rec = static_cast<c3::RankRecord*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    REQUIRE(rec != MAP_FAILED);
    if (!old) v6 = &c3::v6_of(*rec);
    rec->version = old        ? c3::kRecordVersionOld
                   : threaded ? c3::kRecordVersionMt
                   : tags     ? c3::kRecordVersionTags
                   : dirs     ? c3::kRecordVersionDirs
                              : c3::kRecordVersion;
    if (threaded) {
      c3::v8_of(*rec).source = SCOUT_SOURCE_MPI;
      c3::v8_of(*rec).threaded = 1;
    }
    rec->size = static_cast<std::uint32_t>(len);
    rec->world_rank = rank;
    rec->world_size = size;
    rec->pid = getpid();
    __atomic_store_n(&rec->magic, c3::kRecordMagic, __ATOMIC_RELEASE);
    rec->live.state = c3::kStateInitialized;
  }
  ~ShmRecord() {
    munmap(rec, len);
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

// /dev/shm is shared: another user can put a FIFO or a symbolic link where a
// rank's record will be. Neither is opened as a record, and a FIFO never
// blocks the watcher (the healthy rank beside them is still read).
TEST_CASE("a FIFO or a symbolic link in place of a record is refused without blocking the watcher") {
  const std::string job = std::to_string(905000 + getpid() % 1000);
  ShmRecord r0(job, 0, 3);
  const std::string fifo = "/dev/shm" + c3::record_shm_name(job, "0", 1);
  const std::string link = "/dev/shm" + c3::record_shm_name(job, "0", 2);
  ::unlink(fifo.c_str());
  ::unlink(link.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE(::symlink(("/dev/shm" + r0.name).c_str(), link.c_str()) == 0);
  scoutd::RankWatcher w(job, "0", 0, 2, "n1", 0.02);
  w.start();
  REQUIRE(attached(w, 0));
  c3::record_write_begin(*r0.rec);
  c3::rec_store(r0.rec->live.seq, std::uint64_t{5});
  c3::record_write_end(*r0.rec);
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    for (auto& e : w.evidence(false))
      if (e.rank == 0 && e.attached && e.seq == 5) seen = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(seen);  // the watcher went on past the FIFO
  for (auto& e : w.evidence(false))
    if (e.rank != 0) CHECK_FALSE(e.attached);
  w.stop();
  ::unlink(fifo.c_str());
  ::unlink(link.c_str());
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

TEST_CASE("version 5 and version 6 records side by side; the point-to-point part is read and checked") {
  const std::string job = std::to_string(920000 + getpid() % 1000);
  ShmRecord r0(job, 0, 3, /*old=*/true), r1(job, 1, 3), r2(job, 2, 3);
  // Rank 1 waits in MPI_Recv for rank 2; rank 2 ended with SIGSEGV.
  c3::p2p_write_begin(*r1.v6);
  c3::rec_store(r1.v6->p2p.call, std::uint64_t{SCOUT_P2P_RECV});
  c3::rec_store(r1.v6->p2p.entry_ns, std::uint64_t{1});
  c3::rec_store(r1.v6->p2p.peers[0], std::int64_t{2});
  c3::rec_store(r1.v6->p2p.npeers, std::uint64_t{1});
  c3::rec_store(r1.v6->p2p.ops, std::uint64_t{7});
  c3::p2p_write_end(*r1.v6);
  r1.v6->peers[2].peer = 3;  // world rank 2
  r1.v6->peers[2].recvd = 5;
  r1.v6->peers[2].wait_ns = 2000000000;
  r2.v6->end.kind = SCOUT_END_SIGNAL;
  r2.v6->end.code = 11;
  r2.v6->end.addr = 0xdead;
  __atomic_store_n(&r2.v6->end.tag, std::uint64_t{SCOUT_END_SIGNAL}, __ATOMIC_RELEASE);
  scoutd::RankWatcher w(job, "0", 0, 2, "n1", 0.02);
  w.start();
  REQUIRE(attached(w, 0));
  REQUIRE(attached(w, 1));
  REQUIRE(attached(w, 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // counters are read every 10 ticks
  for (auto& e : w.evidence(false)) {
    if (e.rank == 0) CHECK(e.p2p_call.empty());
    if (e.rank == 1) {
      CHECK(e.p2p_call == "MPI_Recv");
      CHECK(e.p2p_peers == std::vector<int>{2});
      CHECK(e.p2p_ops == 7);
      REQUIRE(e.peers.count(2) == 1);
      CHECK(e.peers.at(2).recvd == 5);
      CHECK(e.peers.at(2).wait_s == doctest::Approx(2.0));
    }
    if (e.rank == 2) {
      CHECK(e.end_kind == "signal");
      CHECK(e.end_code == 11);
      CHECK(e.end_addr == 0xdead);
    }
  }
  // A peer that is not a rank of the job: the record is dropped, scoutd goes on.
  c3::p2p_write_begin(*r1.v6);
  c3::rec_store(r1.v6->p2p.peers[0], std::int64_t{77});
  c3::p2p_write_end(*r1.v6);
  CHECK(wait_invalid(w, 1).find("not a rank of this 3-rank job") != std::string::npos);
  // The message count going back is refused too.
  c3::p2p_write_begin(*r2.v6);
  c3::rec_store(r2.v6->p2p.ops, std::uint64_t{10});
  c3::p2p_write_end(*r2.v6);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  c3::p2p_write_begin(*r2.v6);
  c3::rec_store(r2.v6->p2p.ops, std::uint64_t{4});
  c3::p2p_write_end(*r2.v6);
  CHECK(wait_invalid(w, 2).find("message count went back") != std::string::npos);
  w.stop();
}

// Version 9: which way a completion call's requests go reaches the
// evidence while its entry time is the point-to-point part's; directions of
// another wait are not taken, and bits beyond the listed peers are refused.
TEST_CASE("version 9 records: a completion call's directions are read with its wait") {
  const std::string job = std::to_string(940000 + getpid() % 1000);
  ShmRecord r0(job, 0, 3, false, false, /*dirs=*/true), r1(job, 1, 3, false, false, true);
  c3::RecordV9& v9 = c3::v9_of(*r0.rec);
  auto wait = [&](std::uint64_t entry, std::uint64_t dirs_entry, std::uint64_t recv, std::uint64_t send) {
    v9.dirs = {dirs_entry, recv, send, 0};
    c3::p2p_write_begin(*r0.v6);
    c3::rec_store(r0.v6->p2p.call, std::uint64_t{SCOUT_P2P_WAITALL});
    c3::rec_store(r0.v6->p2p.entry_ns, entry);
    c3::rec_store(r0.v6->p2p.peers[0], std::int64_t{1});
    c3::rec_store(r0.v6->p2p.peers[1], std::int64_t{2});
    c3::rec_store(r0.v6->p2p.npeers, std::uint64_t{2});
    c3::p2p_write_end(*r0.v6);
  };
  auto dirs_of = [](scoutd::RankWatcher& w) {
    for (int i = 0; i < 100; ++i) {
      for (auto& e : w.evidence(false))
        if (e.rank == 0 && e.p2p_call == "MPI_Waitall") return e.p2p_dirs;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::string("(no wait)");
  };
  wait(5, 5, 0b01, 0b10);  // a receive from rank 1, a send to rank 2
  scoutd::RankWatcher w(job, "0", 0, 2, "n1", 0.02);
  w.start();
  REQUIRE(attached(w, 0));
  CHECK(dirs_of(w) == "rs");
  wait(9, 5, 0b11, 0b00);  // the directions of an earlier wait: unknown
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(dirs_of(w) == "");
  wait(11, 11, 0b100, 0);  // a bit for a third peer of a wait that lists two
  CHECK(wait_invalid(w, 0).find("beyond the 2 listed") != std::string::npos);
  w.stop();
}

// A threaded program's record (version 8): each communicator's collectives
// and each thread's call reach the evidence; how long a communicator's counts
// have been still is the watcher's own clock; counts that go back and a
// record of the wrong source are refused.
TEST_CASE("version 8 records: progress per communicator and per thread are read, timed and checked") {
  const std::string job = std::to_string(930000 + getpid() % 1000);
  ShmRecord r0(job, 0, 2, false, true), r1(job, 1, 2, false, true);
  c3::RecordV8& a = c3::v8_of(*r0.rec);
  a.comm_progress[0] = {0, 0xA0, 5, 4, 0xF00D, c3::kAllreduce, 1, 1};
  __atomic_store_n(&a.comm_progress_count, std::uint64_t{1}, __ATOMIC_RELEASE);
  a.threads[0].coll_kind = c3::kAllreduce;
  a.threads[0].coll_comm = 0xA0;
  a.threads[0].coll_ordinal = 5;
  __atomic_store_n(&a.threads[0].tid, std::uint64_t{4242}, __ATOMIC_RELEASE);
  // Both ranks keep moving (their other threads' collectives).
  std::atomic<bool> moving{true};
  struct Join {
    std::atomic<bool>& flag;
    std::thread t;
    ~Join() {
      flag = false;
      if (t.joinable()) t.join();
    }
  } mover{moving, std::thread([&] {
    for (std::uint64_t n = 1; moving; ++n) {
      for (auto* r : {r0.rec, r1.rec}) {
        c3::record_write_begin(*r);
        c3::rec_store(r->live.seq, n);
        c3::record_write_end(*r);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  })};
  scoutd::RankWatcher w(job, "0", 0, 1, "n1", 0.02);
  w.start();
  REQUIRE(attached(w, 0));
  REQUIRE(attached(w, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  bool seen = false;
  for (auto& e : w.evidence(false)) {
    if (e.rank != 0) continue;
    seen = true;
    CHECK(e.threaded);
    REQUIRE(e.comm_progress.size() == 1);
    CHECK(e.comm_progress[0].entered == 5);
    CHECK(e.comm_progress[0].completed == 4);
    CHECK(e.comm_progress[0].since_s >= 0.2);  // still since the watcher first saw it
    REQUIRE(e.threads.size() == 1);
    CHECK(e.threads[0].tid == 4242);
    CHECK(e.threads[0].coll_ordinal == 5);
  }
  CHECK(seen);
  // Inside a communicator's collective for a while: the summary's stall says
  // so, though the rank-wide records keep moving (the trigger must gather).
  CHECK(w.summary().max_stall_s >= 0.2);
  CHECK(w.summary().waiting == 1);
  moving = false;
  mover.t.join();
  // A count that goes back is a broken record.
  c3::RecordV8& b = c3::v8_of(*r1.rec);
  b.comm_progress[0] = {0, 0xA0, 9, 9, 0xF00D, c3::kAllreduce, 1, 1};
  __atomic_store_n(&b.comm_progress_count, std::uint64_t{1}, __ATOMIC_RELEASE);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  b.comm_progress[0].lock = 2;
  b.comm_progress[0].entered = 8;
  b.comm_progress[0].completed = 8;
  CHECK(wait_invalid(w, 1).find("collectives went back from 9/9 to 8/8") != std::string::npos);
  // A version-8 record that says it is not the MPI probe's.
  a.source = 7;
  CHECK(wait_invalid(w, 0).find("source 7") != std::string::npos);
  w.stop();
}

// The stop round's last look (refresh, from the caller's thread): a record
// that appeared since the last tick is attached, its end event read: an MPI
// error (an abort marked in addr) with the call it failed in.
TEST_CASE("refresh: a record from between two ticks is attached at once, its MPI error read") {
  const std::string job = std::to_string(940000 + getpid() % 1000);
  ShmRecord r0(job, 0, 1);
  r0.v6->end.kind = SCOUT_END_ABORT;
  r0.v6->end.code = 6;
  r0.v6->end.addr = SCOUT_END_MPI_ERROR | 6;
  r0.v6->end.p2p_call = SCOUT_P2P_SEND;
  __atomic_store_n(&r0.v6->end.tag, std::uint64_t{SCOUT_END_ABORT}, __ATOMIC_RELEASE);
  scoutd::RankWatcher w(job, "0", 0, 0, "n1", 10.0);  // never started: no tick of its own
  for (auto& e : w.evidence(false)) CHECK_FALSE(e.attached);
  w.refresh();
  auto ev = w.evidence(false);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].attached);
  CHECK(ev[0].end_kind == "mpi_error");
  CHECK(ev[0].end_addr == 6);
  CHECK(ev[0].end_call == "MPI_Send");
  CHECK_FALSE(ev[0].ended_on_stop);
}

// Version 10: the tags of a completion call's requests reach the evidence
// with its directions while their entry time is the wait's; tags of another
// wait are not taken, and a tag where the directions say no request goes is
// refused.
TEST_CASE("version 10 records: a completion call's tags are read with its directions") {
  const std::string job = std::to_string(950000 + getpid() % 1000);
  ShmRecord r0(job, 0, 3, false, false, true, /*tags=*/true), r1(job, 1, 3, false, false, true, true);
  c3::RecordV10& v10 = c3::v10_of(*r0.rec);
  auto wait = [&](std::uint64_t entry, std::uint64_t tags_entry, std::int32_t recv_tag, std::int32_t stray) {
    c3::P2PTags t{};
    t.entry_ns = tags_entry;
    for (auto& x : t.recv_tag) x = c3::kTagNone;
    for (auto& x : t.send_tag) x = c3::kTagNone;
    t.recv_tag[0] = recv_tag;  // a receive from rank 1
    t.send_tag[1] = 7;         // a send to rank 2
    t.recv_tag[1] = stray;
    v10.tags = t;
    v10.v9.dirs = {entry, 0b01, 0b10, 0};
    c3::p2p_write_begin(*r0.v6);
    c3::rec_store(r0.v6->p2p.call, std::uint64_t{SCOUT_P2P_WAITALL});
    c3::rec_store(r0.v6->p2p.entry_ns, entry);
    c3::rec_store(r0.v6->p2p.peers[0], std::int64_t{1});
    c3::rec_store(r0.v6->p2p.peers[1], std::int64_t{2});
    c3::rec_store(r0.v6->p2p.npeers, std::uint64_t{2});
    c3::p2p_write_end(*r0.v6);
  };
  auto tags_of = [](scoutd::RankWatcher& w) {
    for (int i = 0; i < 100; ++i) {
      for (auto& e : w.evidence(false))
        if (e.rank == 0 && e.p2p_call == "MPI_Waitall")
          return fmt::format("{} {}/{}", e.p2p_dirs, fmt::join(e.p2p_recv_tags, ","), fmt::join(e.p2p_send_tags, ","));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::string("(no wait)");
  };
  wait(5, 5, 2, c3::kTagNone);
  scoutd::RankWatcher w(job, "0", 0, 2, "n1", 0.02);
  w.start();
  REQUIRE(attached(w, 0));
  CHECK(tags_of(w) == "rs 2,-2/-2,7");
  wait(9, 5, 3, c3::kTagNone);  // the tags of an earlier wait: unknown, the directions still read
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(tags_of(w) == "rs /");
  wait(11, 11, 2, 4);  // a receive tag for rank 2, to which only a send goes
  CHECK(wait_invalid(w, 0).find("receive tag 4 for peer slot 1, which dirs says awaits no receive") !=
        std::string::npos);
  w.stop();
}
