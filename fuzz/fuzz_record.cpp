// libFuzzer target: the shm record reader. The input is the bytes of a rank
// record as a hostile job could write them (short inputs are zero-padded);
// every reader scoutd uses on a mapped record runs on it and must stay in
// bounds and terminate.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "libc3/rank_record.hpp"

using namespace scout::c3;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A version-7 record (version 6, and version 5, at its front).
  auto v7 = std::make_unique<RecordV7>();
  std::memset(v7.get(), 0, sizeof *v7);
  std::memcpy(v7.get(), data, std::min(size, sizeof *v7));
  RecordV6* v6 = &v7->v6;
  RankRecord* rec = &v6->v5;
  // The header check sees the size the mapping claims (the input's own).
  (void)record_check_header(*rec, size);
  RecordLive live;
  if (record_read(*rec, live, nullptr, 4)) {
    (void)record_check_live(live);
    CollEvent ev[kRingSize];
    const std::uint64_t from = live.seq >= kRingSize ? live.seq - kRingSize + 1 : 1;
    std::size_t n = ring_read(*rec, from, live.seq, ev);
    if (n > kRingSize) __builtin_trap();
    n = ring_read(*rec, live.out_sig_seq, live.seq, ev);  // arbitrary bounds too
    if (n > kRingSize) __builtin_trap();
  }
  for (std::size_t i = 0; i < kCommTable; ++i) {
    CommEntry c;
    std::memcpy(&c, &rec->comms[i], sizeof c);
    if (comm_entry_check(c, i).empty() && c.stored > kCommMembers) __builtin_trap();
  }
  OutSig os[kOutSigRing];
  std::uint64_t next = 0;
  std::size_t n = outsig_read(*rec, rec->live.out_sig, os, &next);
  if (n > kOutSigRing) __builtin_trap();
  (void)coll_name(static_cast<std::uint32_t>(rec->live.kind));
  // The point-to-point part: its live copy, the end event, the call names.
  P2PLive p2p{};
  if (p2p_read(*v6, p2p, 4)) {
    const std::string why = p2p_check_live(p2p, rec->world_size);
    if (why.empty() && (p2p.npeers > kBlockedPeers || p2p.call >= SCOUT_P2P_CALL_COUNT)) __builtin_trap();
    (void)p2p_call_name(p2p.call);
  }
  EndEvent end;
  std::string why;
  if (end_read(*v6, end, &why) &&
      ((end.kind != SCOUT_END_ABORT && end.kind != SCOUT_END_SIGNAL && end.kind != SCOUT_END_EXIT) ||
       (end.kind == SCOUT_END_EXIT && (end.code < 0 || end.code > 255)) ||
       (end.kind == SCOUT_END_ABORT && end.addr != 0 && (end.addr & ~SCOUT_END_MPI_ERROR) > kMpiErrorClassCount)))
    __builtin_trap();
  // The GPU part (the NCCL probe's).
  GpuLive g;
  if (gpu_read(*v7, g, 4) && gpu_check_live(g, rec->live.seq).empty() && g.done > g.started) __builtin_trap();
  (void)record_size_of(rec->version);
  // The threaded part (version 8), from the same bytes read as one.
  auto v8 = std::make_unique<RecordV8>();
  std::memset(v8.get(), 0, sizeof *v8);
  std::memcpy(v8.get(), data, std::min(size, sizeof *v8));
  std::vector<CommProgress> comms;
  std::vector<ThreadSlot> threads;
  if (comm_progress_read(*v8, comms).empty())
    for (auto& c : comms)
      if (c.completed > c.entered || comms.size() > kProgressComms) __builtin_trap();
  if (threads_read(*v8, v8->v6.v5.world_size, threads).empty())
    for (auto& t : threads)
      if (t.p2p.npeers > kBlockedPeers || t.tid == 0 || threads.size() > kThreadSlots) __builtin_trap();
  // The requests' directions (version 9), from the same bytes read as one.
  auto v9 = std::make_unique<RecordV9>();
  std::memset(v9.get(), 0, sizeof *v9);
  std::memcpy(v9.get(), data, std::min(size, sizeof *v9));
  P2PDirs dirs;
  if (dirs_read(*v9, dirs, 4) && dirs_check(dirs, p2p.npeers).empty() &&
      ((dirs.recv_mask | dirs.send_mask) >> (p2p.npeers < kBlockedPeers ? p2p.npeers : kBlockedPeers)) != 0)
    __builtin_trap();
  // The requests' tags (version 10), from the same bytes read as one: a tag
  // that passed the check is where the directions say, and a tag or -1.
  auto v10 = std::make_unique<RecordV10>();
  std::memset(v10.get(), 0, sizeof *v10);
  std::memcpy(v10.get(), data, std::min(size, sizeof *v10));
  P2PTags tags;
  if (dirs_read(v10->v9, dirs, 4) && dirs_check(dirs, p2p.npeers).empty() && tags_read(*v10, tags, 4) &&
      tags_check(tags, dirs, p2p.npeers).empty())
    for (std::size_t k = 0; k < kBlockedPeers; ++k)
      if ((((dirs.recv_mask >> k) & 1) != 0) != (tags.recv_tag[k] != kTagNone) || tags.send_tag[k] < kTagNone)
        __builtin_trap();
  return 0;
}
