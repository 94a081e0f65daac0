// The shm record protocol: seqlock reads are never torn; headers with the
// wrong magic, version or size are refused with a message saying what was
// expected.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "libc3/rank_record.hpp"
#include "common/ids.hpp"

using namespace scout::c3;

namespace {
// A version-5 record (still read): the front of version 6.
std::unique_ptr<RankRecord> fresh() {
  auto r = std::make_unique<RankRecord>();
  r->magic = kRecordMagic;
  r->version = kRecordVersionOld;
  r->size = sizeof(RankRecord);
  r->world_rank = 3;
  r->world_size = 8;
  r->pid = 1234;
  return r;
}
}  // namespace

using scout::common::valid_job_id;
using scout::common::valid_step_id;

TEST_CASE("header checks name what was expected") {
  auto r = fresh();
  CHECK(record_check_header(*r, sizeof *r).empty());
  CHECK(record_check_header(*r, 16).find("expected at least") != std::string::npos);
  r->magic = 0xdeadbeef;
  CHECK(record_check_header(*r, sizeof *r).find("bad magic") != std::string::npos);
  r = fresh();
  r->version = 1;
  auto why = record_check_header(*r, sizeof *r);
  CHECK(why.find("record version 1") != std::string::npos);
  CHECK(why.find("expected version 5") != std::string::npos);
  r = fresh();
  r->size = 12;
  CHECK(record_check_header(*r, sizeof *r).find("size field") != std::string::npos);
  r = fresh();
  r->world_rank = 9;
  CHECK(record_check_header(*r, sizeof *r).find("out of range") != std::string::npos);
}

TEST_CASE("version 6: its size, the mapping covering it, the point-to-point part range-checked") {
  auto v6 = std::make_unique<RecordV6>();
  RankRecord& r = v6->v5;
  r.magic = kRecordMagic;
  r.version = kRecordVersion;
  r.size = sizeof(RecordV6);
  r.world_rank = 1;
  r.world_size = 4;
  r.pid = 99;
  CHECK(record_check_header(r, sizeof(RecordV6)).empty());
  CHECK(record_check_header(r, sizeof(RankRecord)).find("expected at least 24448 for version 6") != std::string::npos);
  r.size = sizeof(RankRecord);
  CHECK(record_check_header(r, sizeof(RecordV6)).find("size field") != std::string::npos);
  CHECK(as_v6(r, kRecordVersion) == v6.get());
  CHECK(as_v6(r, kRecordVersionOld) == nullptr);

  P2PLive l{};
  l.call = SCOUT_P2P_RECV;
  l.npeers = 2;
  l.peers[0] = 3;
  l.peers[1] = kPeerAny;
  CHECK(p2p_check_live(l, 4).empty());
  CHECK(std::string(p2p_call_name(l.call)) == "MPI_Recv");
  l.peers[0] = 4;  // not a rank of a 4-rank job
  CHECK(p2p_check_live(l, 4).find("not a rank of this 4-rank job") != std::string::npos);
  l.peers[0] = 3;
  l.npeers = 9;
  CHECK(p2p_check_live(l, 4).find("at most 8 fit") != std::string::npos);
  l.npeers = 0;
  l.call = 999;
  CHECK(p2p_check_live(l, 4).find("not one scout knows") != std::string::npos);

  EndEvent e{};
  std::string why;
  CHECK_FALSE(end_read(*v6, e, &why));  // none yet
  CHECK(why.empty());
  v6->end.kind = SCOUT_END_SIGNAL;
  v6->end.code = 11;
  v6->end.addr = 0x10;
  v6->end.tag = SCOUT_END_SIGNAL;
  REQUIRE(end_read(*v6, e, &why));
  CHECK(e.code == 11);
  v6->end.code = 400;  // not a signal
  CHECK_FALSE(end_read(*v6, e, &why));
  CHECK(why.find("signal outside 1-64") != std::string::npos);
  // An MPI error: an abort (what a reader that knows no more reads) marked
  // in addr with the standard class's index.
  v6->end.kind = v6->end.tag = SCOUT_END_ABORT;
  v6->end.code = 6;
  v6->end.addr = SCOUT_END_MPI_ERROR | 6;  // MPI_ERR_RANK, the 6th standard class
  REQUIRE(end_read(*v6, e, &why));
  CHECK(std::string(kMpiErrorClassNames[(e.addr & ~SCOUT_END_MPI_ERROR) - 1]) == "MPI_ERR_RANK");
  v6->end.addr = SCOUT_END_MPI_ERROR;  // a class of the library's own: by number
  CHECK(end_read(*v6, e, &why));
  v6->end.addr = SCOUT_END_MPI_ERROR | (kMpiErrorClassCount + 1);  // no such class
  CHECK_FALSE(end_read(*v6, e, &why));
  CHECK(why.find("standard class index") != std::string::npos);
  v6->end.addr = SCOUT_END_MPI_ERROR | 6;
  v6->end.code = 0;  // MPI_SUCCESS is no error
  CHECK_FALSE(end_read(*v6, e, &why));
  v6->end.code = 1'000'001;  // beyond any class
  CHECK_FALSE(end_read(*v6, e, &why));
  v6->end.code = 6;
  v6->end.addr = 0x40;  // an abort's addr is 0 or marked
  CHECK_FALSE(end_read(*v6, e, &why));
  v6->end.addr = 0;  // MPI_Abort(comm, 6)
  REQUIRE(end_read(*v6, e, &why));
  // An exit before MPI_Finalize: its status, 0 to 255, and no address.
  v6->end.kind = v6->end.tag = SCOUT_END_EXIT;
  v6->end.code = 3;
  REQUIRE(end_read(*v6, e, &why));
  CHECK(e.kind == SCOUT_END_EXIT);
  CHECK(e.code == 3);
  for (std::int64_t bad : {-1, 256}) {
    v6->end.code = bad;
    CHECK_FALSE(end_read(*v6, e, &why));
    CHECK(why.find("exit status 0-255") != std::string::npos);
  }
  v6->end.code = 0;
  v6->end.addr = 0x40;
  CHECK_FALSE(end_read(*v6, e, &why));
  v6->end.addr = 0;
  v6->end.kind = v6->end.tag = 4;  // no such kind
  CHECK_FALSE(end_read(*v6, e, &why));
  CHECK(why.find("unknown kind") != std::string::npos);
}

// A record header of `version` and `size`, for rank `rank` of `world`.
static RankRecord& header(RankRecord& r, std::uint32_t version, std::size_t size, int rank, int world) {
  r.magic = kRecordMagic;
  r.version = version;
  r.size = static_cast<std::uint32_t>(size);
  r.world_rank = rank;
  r.world_size = world;
  return r;
}

TEST_CASE("version 7: the NCCL probe's GPU part, its size and range checks") {
  auto v7 = std::make_unique<RecordV7>();
  RankRecord& r = header(v7->v6.v5, kRecordVersionGpu, sizeof(RecordV7), 0, 2);
  r.pid = 7;
  CHECK(record_check_header(r, sizeof(RecordV7)).empty());
  CHECK(record_check_header(r, sizeof(RecordV6)).find("expected at least 25152 for version 7") != std::string::npos);
  r.size = sizeof(RecordV6);  // a version-6 size under a version-7 header
  CHECK(record_check_header(r, sizeof(RecordV7)).find("size field") != std::string::npos);
  r.version = 11;
  CHECK(record_check_header(r, sizeof(RecordV7)).find("expected version 5, 6, 7, 8, 9 or 10") != std::string::npos);
  CHECK(as_v7(r, kRecordVersionGpu) == v7.get());
  CHECK(as_v6(r, kRecordVersionGpu) == &v7->v6);  // version 7 holds version 6
  CHECK(as_v7(r, kRecordVersion) == nullptr);

  v7->gpu.tracking = 1;
  v7->gpu.started = 12;
  v7->gpu.done = 11;
  GpuLive g{};
  REQUIRE(gpu_read(*v7, g));
  CHECK(g.started == 12);
  CHECK(gpu_check_live(g, 12).empty());
  g.done = 13;  // completed more than it began
  CHECK(gpu_check_live(g, 13).find("completed 13 operations but started only 12") != std::string::npos);
  g.done = 1;
  g.started = 1u << 20;  // far beyond what the host issued
  CHECK(gpu_check_live(g, 10).find("the host issued 10") != std::string::npos);
  g.started = 2;
  g.tracking = 5;
  CHECK(gpu_check_live(g, 10).find("tracking") != std::string::npos);
  v7->gpu_lock = 1;  // a write in progress: no torn copy
  CHECK_FALSE(gpu_read(*v7, g, 10));
}

TEST_CASE("a reader never sees a torn record") {
  auto r = fresh();
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (std::uint64_t v = 1; !stop.load(std::memory_order_relaxed); ++v) {
      record_write_begin(*r);
      auto* w = reinterpret_cast<std::uint64_t*>(&r->live);
      for (std::size_t i = 0; i < sizeof(RecordLive) / 8; ++i) rec_store(w[i], v);
      record_write_end(*r);
      // A probe writes between MPI calls, never back to back: without a
      // gap a reader on a loaded 2-core host may never find the record
      // still (ok == 0 seen in CI), which says nothing about tearing.
      for (int k = 0; k < 512; ++k) std::atomic_signal_fence(std::memory_order_seq_cst);
    }
  });
  int ok = 0, torn = 0;
  for (int i = 0; i < 200000; ++i) {
    RecordLive l;
    if (!record_read(*r, l, nullptr, 100)) continue;
    ++ok;
    auto* w = reinterpret_cast<const std::uint64_t*>(&l);
    for (std::size_t k = 1; k < sizeof(RecordLive) / 8; ++k)
      if (w[k] != w[0]) { ++torn; break; }
  }
  stop = true;
  writer.join();
  CHECK(ok > 0);
  CHECK(torn == 0);
}

TEST_CASE("a read during a write in progress fails instead of returning a torn copy") {
  auto r = fresh();
  record_write_begin(*r);  // writer stopped half-way (odd lock)
  RecordLive l;
  CHECK_FALSE(record_read(*r, l, nullptr, 10));
  record_write_end(*r);
  CHECK(record_read(*r, l, nullptr, 10));
}

TEST_CASE("names and ids") {
  CHECK(record_shm_name("17", "0", 5) == "/scout.17.0.5");
  CHECK(valid_job_id("1000001"));
  CHECK_FALSE(valid_job_id("12a"));
  CHECK_FALSE(valid_job_id(""));
  CHECK_FALSE(valid_job_id("../etc"));
  CHECK(valid_step_id("batch"));
  CHECK_FALSE(valid_step_id("x/y"));
}

TEST_CASE("the ring keeps the last collectives and never returns a slot being rewritten") {
  auto r = fresh();
  for (std::uint64_t k = 1; k <= 100; ++k) {
    ring_enter(*r, k, 1000 + k, kAllreduce, 0xC0, 10 * k);
    if (k != 100) ring_exit(*r, k, 10 * k + 5);
  }
  CollEvent ev[kRingSize];
  auto n = ring_read(*r, 1, 100, ev);
  REQUIRE(n == kRingSize);
  CHECK(ev[0].seq == 100 - kRingSize + 1);
  CHECK(ev[n - 1].seq == 100);
  CHECK(ev[n - 1].exit_ns == 0);  // still inside
  CHECK(ev[n - 2].fingerprint == 1099);
  CHECK(ev[n - 2].exit_ns == 995);
  CHECK(ev[n - 2].comm == 0xC0);
  // A slot being rewritten (tag 0) is skipped.
  __atomic_store_n(&r->ring[99 % kRingSize].tag, 0, __ATOMIC_RELAXED);
  CHECK(ring_read(*r, 90, 100, ev) == 10);
}

extern "C" {
std::size_t scout_test_record_v5_c_size(void);
std::size_t scout_test_record_v5_c_offset_live(void);
std::size_t scout_test_record_v5_c_offset_outsigs(void);
std::size_t scout_test_record_v5_c_offset_comms(void);
std::size_t scout_test_record_v6_c_size(void);
std::size_t scout_test_record_v6_c_offset_p2p(void);
std::size_t scout_test_record_v6_c_offset_peers(void);
}

TEST_CASE("record ABI v5: a C writer and the C++ reader see the same layout") {
  CHECK(scout_test_record_v5_c_size() == sizeof(scout::c3::RankRecord));
  CHECK(scout_test_record_v5_c_offset_live() == offsetof(scout::c3::RankRecord, live));
  CHECK(scout_test_record_v5_c_offset_outsigs() == offsetof(scout::c3::RankRecord, outsigs));
  CHECK(scout_test_record_v5_c_offset_comms() == offsetof(scout::c3::RankRecord, comms));
  CHECK(scout_test_record_v6_c_size() == sizeof(scout::c3::RecordV6));
  CHECK(scout_test_record_v6_c_offset_p2p() == offsetof(scout::c3::RecordV6, p2p));
  CHECK(scout_test_record_v6_c_offset_peers() == offsetof(scout::c3::RecordV6, peers));
}

// Hostile records: the job's user writes the record, so every bound a reader
// takes from it is checked (issue "trust but verify", part 4).
TEST_CASE("readers stay bounded on hostile sequence numbers and counts") {
  auto r = fresh();
  CollEvent ev[kRingSize];
  // seq == UINT64_MAX used to wrap the loop counter and spin forever.
  CHECK(ring_read(*r, 1, UINT64_MAX, ev) == 0);  // no slot carries those tags
  r->ring[UINT64_MAX % kRingSize].tag = UINT64_MAX;
  CHECK(ring_read(*r, UINT64_MAX - 3, UINT64_MAX, ev) == 1);
  CHECK(ring_read(*r, 10, 5, ev) == 0);  // from past to
  OutSig os[kOutSigRing];
  std::uint64_t next = 0;
  r->outsig_count = UINT64_MAX;
  CHECK(outsig_read(*r, 0, os, &next) == 0);
  r->outsig_count = 5;
  CHECK(outsig_read(*r, 9, os, &next) == 0);  // count went back: nothing, no wrap
  CHECK(next == 5);
}

TEST_CASE("live fields and communicator entries are range-checked") {
  RecordLive l{};
  CHECK(record_check_live(l).empty());
  l.in_collective = 7;
  CHECK(record_check_live(l).find("expected 0 or 1") != std::string::npos);
  l = {};
  l.seq = UINT64_MAX;
  CHECK(record_check_live(l).find("out of range") != std::string::npos);
  l = {};
  l.kind = 0x7777;
  CHECK(record_check_live(l).find("kind") != std::string::npos);
  l = {};
  l.state = 99;
  CHECK(record_check_live(l).find("state") != std::string::npos);
  CommEntry c{};
  c.size = 100;
  c.stored = 64;
  CHECK(comm_entry_check(c, 0).empty());
  c.stored = 65;  // would read past members[64]
  CHECK(comm_entry_check(c, 2).find("at most 64 fit") != std::string::npos);
  c.size = 3;
  c.stored = 4;
  CHECK(comm_entry_check(c, 2).find("size-3") != std::string::npos);
  c.stored = 2;
  c.members[1] = -5;
  CHECK(comm_entry_check(c, 2).find("member -5") != std::string::npos);
}

// Version 8 (threaded MPI programs): version 6 at the front, the
// communicators' progress and the threads' slots after it, each read under
// its own seqlock and range-checked.
extern "C" size_t scout_test_record_v8_c_size(void);
extern "C" size_t scout_test_record_v8_c_offset_threads(void);
TEST_CASE("record v8: the threaded part is read per communicator and per thread, and broken values are refused") {
  CHECK(scout_test_record_v8_c_size() == sizeof(RecordV8));
  CHECK(scout_test_record_v8_c_offset_threads() == offsetof(RecordV8, threads));
  auto v8 = std::make_unique<RecordV8>();
  RankRecord& r = header(v8->v6.v5, kRecordVersionMt, sizeof(RecordV8), 1, 4);
  CHECK(record_check_header(r, sizeof(RecordV8)).empty());
  CHECK(as_v8(r, kRecordVersionMt) == v8.get());
  CHECK(as_v6(r, kRecordVersionMt) == &v8->v6);  // version 8 holds version 6
  CHECK(as_v7(r, kRecordVersionMt) == nullptr);   // ... and not version 7's GPU part
  CHECK(as_v8(r, kRecordVersionGpu) == nullptr);

  v8->comm_progress_count = 2;
  v8->comm_progress[0] = {0, 0xabc, 7, 6, 0x1234, kAllreduce, 100, 90};
  v8->comm_progress[1] = {0, 0xdef, 3, 3, 0x5678, kBarrier, 100, 90};
  std::vector<CommProgress> comms;
  CHECK(comm_progress_read(*v8, comms).empty());
  REQUIRE(comms.size() == 2);
  CHECK(comms[0].entered == 7);
  CHECK(comms[0].completed == 6);
  CHECK(comms[1].id == 0xdef);
  std::size_t busy = 0;
  v8->comm_progress[1].lock = 1;  // a writer inside for every try: left out, not refused
  CHECK(comm_progress_read(*v8, comms, &busy).empty());
  CHECK(busy == 1);
  CHECK(comms.size() == 1);
  v8->comm_progress[1].lock = 2;
  v8->comm_progress[0].completed = 8;  // more completed than entered
  CHECK(comm_progress_read(*v8, comms).find("7 collectives entered and 8 completed") != std::string::npos);
  v8->comm_progress[0].completed = 6;
  v8->comm_progress_count = 33;
  CHECK(comm_progress_read(*v8, comms).find("at most 32 fit") != std::string::npos);
  v8->comm_progress_count = 1;
  v8->comm_progress[0].kind = 0x777;
  CHECK(comm_progress_read(*v8, comms).find("kind") != std::string::npos);
  v8->comm_progress[0].kind = kAllreduce;

  std::vector<ThreadSlot> threads;
  CHECK(threads_read(*v8, 4, threads).empty());
  CHECK(threads.empty());  // no slot claimed
  v8->threads[0].tid = 4242;
  v8->threads[0].coll_kind = kAllreduce;
  v8->threads[0].coll_comm = 0xabc;
  v8->threads[0].coll_ordinal = 7;
  v8->threads[3].tid = 4243;
  v8->threads[3].p2p.call = SCOUT_P2P_RECV;
  v8->threads[3].p2p.npeers = 1;
  v8->threads[3].p2p.peers[0] = 2;
  CHECK(threads_read(*v8, 4, threads).empty());
  REQUIRE(threads.size() == 2);
  CHECK(threads[0].coll_ordinal == 7);
  CHECK(threads[1].p2p.peers[0] == 2);
  v8->threads[3].p2p.peers[0] = 9;  // not a rank of this 4-rank job
  CHECK(threads_read(*v8, 4, threads).find("thread slot 3: awaited peer 9") != std::string::npos);
}

// Version 9 (the MPI probe, unthreaded): version 6 at the front, then which
// way a completion call's requests go, under its own seqlock.
extern "C" size_t scout_test_record_v9_c_size(void);
extern "C" size_t scout_test_record_v9_c_offset_dirs(void);
TEST_CASE("record v9: the requests' directions are read under their seqlock, and bits beyond the peers refused") {
  CHECK(scout_test_record_v9_c_size() == sizeof(RecordV9));
  CHECK(scout_test_record_v9_c_offset_dirs() == offsetof(RecordV9, dirs));
  auto v9 = std::make_unique<RecordV9>();
  RankRecord& r = header(v9->v6.v5, kRecordVersionDirs, sizeof(RecordV9), 1, 4);
  CHECK(record_check_header(r, sizeof(RecordV9)).empty());
  CHECK(record_check_header(r, sizeof(RecordV6)).find("expected at least 24576 for version 9") != std::string::npos);
  CHECK(as_v9(r, kRecordVersionDirs) == v9.get());
  CHECK(as_v6(r, kRecordVersionDirs) == &v9->v6);  // version 9 holds version 6
  CHECK(as_v8(r, kRecordVersionDirs) == nullptr);
  CHECK(as_v9(r, kRecordVersionMt) == nullptr);
  v9->dirs = {1234, 0b01, 0b10, 0};
  P2PDirs d{};
  CHECK(dirs_read(*v9, d));
  CHECK(d.entry_ns == 1234);
  CHECK(dirs_check(d, 2).empty());
  CHECK(dirs_check(d, 1).find("beyond the 1 listed") != std::string::npos);
  v9->dirs_lock = 1;  // a writer inside for every try: no copy
  CHECK_FALSE(dirs_read(*v9, d, 3));
}

// Version 10 (the MPI probe, unthreaded): version 9 at the front, then the
// tags of a completion call's requests per peer and direction.
extern "C" size_t scout_test_record_v10_c_size(void);
extern "C" size_t scout_test_record_v10_c_offset_tags(void);
TEST_CASE("record v10: the requests' tags are read under their seqlock, and checked against the directions") {
  CHECK(scout_test_record_v10_c_size() == sizeof(RecordV10));
  CHECK(scout_test_record_v10_c_offset_tags() == offsetof(RecordV10, tags));
  auto v10 = std::make_unique<RecordV10>();
  RankRecord& r = header(v10->v9.v6.v5, kRecordVersionTags, sizeof(RecordV10), 1, 4);
  CHECK(record_check_header(r, sizeof(RecordV10)).empty());
  CHECK(record_check_header(r, sizeof(RecordV9)).find("expected at least 24768 for version 10") != std::string::npos);
  CHECK(as_v10(r, kRecordVersionTags) == v10.get());
  CHECK(as_v9(r, kRecordVersionTags) == &v10->v9);  // version 10 holds version 9
  CHECK(as_v6(r, kRecordVersionTags) == &v10->v9.v6);
  CHECK(as_v10(r, kRecordVersionDirs) == nullptr);
  // Peer 0: a receive with tag 2 and a send with tag 1; peer 1: a send of
  // several tags.
  const P2PDirs d{1234, 0b01, 0b11, 0};
  P2PTags t{};
  t.entry_ns = 1234;
  for (auto& x : t.recv_tag) x = kTagNone;
  for (auto& x : t.send_tag) x = kTagNone;
  t.recv_tag[0] = 2;
  t.send_tag[0] = 1;
  t.send_tag[1] = kTagSeveral;
  v10->tags = t;
  P2PTags got{};
  CHECK(tags_read(*v10, got));
  CHECK(got.entry_ns == 1234);
  CHECK(got.recv_tag[0] == 2);
  CHECK(tags_check(got, d, 2).empty());
  got.recv_tag[1] = 5;  // a tag where no receive is awaited
  CHECK(tags_check(got, d, 2).find("receive tag 5 for peer slot 1, which dirs says awaits no receive") !=
        std::string::npos);
  got.recv_tag[1] = kTagNone;
  got.send_tag[0] = -7;
  CHECK(tags_check(got, d, 2).find("send tag -7 for peer slot 0; expected an MPI tag") != std::string::npos);
  got.send_tag[0] = 1;
  CHECK(tags_check(got, d, 1).find("peer slot 1") != std::string::npos);  // beyond the one peer listed
  v10->tags_lock = 1;  // a writer inside for every try: no copy
  CHECK_FALSE(tags_read(*v10, got, 3));
}
