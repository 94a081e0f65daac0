// Point-to-point state of the probe (see probe_state.hpp): what the rank
// waits for, the requests it has in flight, and per-peer counters, written
// into the version-6 part of the rank record. Hot path: no allocation, lock
// or system call; fixed tables; the clock is the probe's (TSC or vDSO).
#include <algorithm>
#include <cstring>

#include "probe/probe_state.hpp"

namespace scout::probe {

namespace {

std::uint64_t g_ops = 0;      // messages completed (published as p2p.ops)
bool g_waiting = false;       // p2p.call is set
bool g_polling = false;       // ... by a Test/Iprobe loop (cleared by any progress)
MPI_Comm g_last_mprobe_comm = MPI_COMM_NULL;
// Threaded programs: whether this thread's own slot shows a wait, and one
// begun by a Test/Iprobe loop (the rank-wide flags above are whichever
// thread wrote last).
SCOUT_TLS bool t_waiting = false;
SCOUT_TLS bool t_polling = false;

// Requests in flight: open addressing keyed by the handle. A handle the MPI
// library reuses simply overwrites its stale entry.
constexpr int kReqSlots = 4096;
struct ReqSlot {
  MPI_Request req;
  const CommSlot* comm;
  std::uint64_t bytes;
  std::int32_t peer;  // world rank; kPeerAny; -3 unknown; -2 none (MPI_PROC_NULL)
  std::int32_t tag;   // -1 any (MPI_ANY_TAG)
  std::uint8_t used;  // 0 free, 1 used, 2 removed
  std::uint8_t recv;
  std::uint8_t persistent;
  std::uint8_t active;  // a persistent request started (MPI_Start) and not completed since
};
ReqSlot g_reqs[kReqSlots];
// Non-persistent requests in the table (in flight), and whether one was
// ever left untracked: a completion call's directions are published only
// when the requests it waits for are all this rank has in flight (another
// send on its way may be what a peer waiting to receive from it needs).
std::int64_t g_inflight = 0;
bool g_untracked = false;
// Persistent requests started and not completed since: in flight too (an
// active persistent receive outside a wait may be what a peer's send needs).
std::int64_t g_active_persistent = 0;

unsigned req_hash(MPI_Request r) noexcept {
  auto v = reinterpret_cast<std::uintptr_t>(r);
  v ^= v >> 15;
  v *= 0x9E3779B97F4A7C15ULL;
  return static_cast<unsigned>(v >> 40) % kReqSlots;
}

int req_find(MPI_Request r) noexcept {
  if (r == MPI_REQUEST_NULL) return -1;
  unsigned s = req_hash(r);
  for (int i = 0; i < 32; ++i, s = (s + 1) % kReqSlots) {  // bounded probe
    if (g_reqs[s].used == 0) return -1;
    if (g_reqs[s].used == 1 && g_reqs[s].req == r) return static_cast<int>(s);
  }
  return -1;
}

inline void add_op() noexcept {
  if (g_threaded) {
    __atomic_add_fetch(&g_ops, 1, __ATOMIC_RELAXED);
    thread_count_op();
  } else {
    ++g_ops;
  }
}

// `tags` and `dirs` (a completion call's requests: their tags, and which
// way each listed peer's go) are written first, in a version-10 record, so
// that a reader that sees this wait's p2p part finds them beside it (paired
// by entry time).
void publish_wait(std::uint64_t call, std::uint64_t t, std::uint64_t comm_id, std::int64_t tag,
                  const std::int64_t* peers, int n, bool more, std::uint64_t any_comm,
                  const std::uint64_t* dirs = nullptr, const std::int64_t (*tags)[c3::kBlockedPeers] = nullptr) noexcept {
  c3::RecordV6& v6 = c3::v6_of(*g_record);
  if (dirs && tags && g_record->version == c3::kRecordVersionTags) {
    c3::RecordV10& v10 = c3::v10_of(*g_record);
    seq_begin(v10.tags_lock);
    c3::rec_store(v10.tags.entry_ns, t);
    for (std::size_t k = 0; k < c3::kBlockedPeers; ++k) {
      c3::rec_store(v10.tags.recv_tag[k], tags[0][k]);
      c3::rec_store(v10.tags.send_tag[k], tags[1][k]);
    }
    seq_end(v10.tags_lock);
  }
  if (dirs && (g_record->version == c3::kRecordVersionDirs || g_record->version == c3::kRecordVersionTags)) {
    c3::RecordV9& v9 = c3::v9_of(*g_record);
    seq_begin(v9.dirs_lock);
    c3::rec_store(v9.dirs.entry_ns, t);
    c3::rec_store(v9.dirs.recv_mask, dirs[0]);
    c3::rec_store(v9.dirs.send_mask, dirs[1]);
    seq_end(v9.dirs_lock);
  }
  seq_begin(v6.p2p_lock);
  c3::rec_store(v6.p2p.call, call);
  c3::rec_store(v6.p2p.entry_ns, t);
  c3::rec_store(v6.p2p.comm_id, comm_id);
  c3::rec_store(v6.p2p.tag, tag);
  for (int i = 0; i < n; ++i) c3::rec_store(v6.p2p.peers[i], peers[i]);
  c3::rec_store(v6.p2p.npeers, static_cast<std::uint64_t>(n));
  c3::rec_store(v6.p2p.more_peers, std::uint64_t{more});
  c3::rec_store(v6.p2p.any_comm, any_comm);
  seq_end(v6.p2p_lock);
  g_waiting = true;
  if (g_threaded) {
    thread_wait(call, t, comm_id, tag, peers, n, more, any_comm);
    t_waiting = true;
  }
}

void publish_done() noexcept {
  c3::RecordV6& v6 = c3::v6_of(*g_record);
  seq_begin(v6.p2p_lock);
  c3::rec_store(v6.p2p.call, std::uint64_t{0});
  c3::rec_store(v6.p2p.npeers, std::uint64_t{0});
  c3::rec_store(v6.p2p.ops, g_threaded ? std::max(__atomic_load_n(&g_ops, __ATOMIC_RELAXED),
                                                  __atomic_load_n(&v6.p2p.ops, __ATOMIC_RELAXED))
                                       : g_ops);
  seq_end(v6.p2p_lock);
  g_waiting = false;
  g_polling = false;
  if (g_threaded) {
    thread_wait_done();
    t_waiting = t_polling = false;
  }
}

// Whether the calling thread already polls (threaded: its own loop).
inline bool polling_now() noexcept { return g_threaded ? t_polling : g_polling; }
inline void polling_began() noexcept {
  g_polling = true;
  t_polling = true;
}

// Adds a world rank (or kPeerAny) to a small list, without duplicates.
void add_peer(std::int64_t* peers, int& n, bool& more, std::int64_t p) noexcept {
  for (int i = 0; i < n; ++i)
    if (peers[i] == p) return;
  if (n < static_cast<int>(c3::kBlockedPeers)) peers[n++] = p;
  else more = true;
}

}  // namespace

void p2p_poll_clear() noexcept {
  if (g_record && (g_waiting || (g_threaded && t_waiting))) publish_done();
}

P2PBlock::P2PBlock(std::uint64_t c, MPI_Comm mc, int tag, int peer_a, int peer_b) noexcept {
  if (!g_record) return;
  call = c;
  t0 = now_ns();
  comm = comm_lookup(mc);
  std::int64_t peers[2];
  int n = 0;
  std::uint64_t any_comm = 0;
  const int ps[2] = {peer_a, peer_b};
  for (int i = 0; i < 2; ++i) {
    const int p = ps[i];
    if (p == kNoPeer || p == MPI_PROC_NULL) continue;
    if (p == MPI_ANY_SOURCE) {
      peers[n++] = c3::kPeerAny;
      any_comm = comm ? comm->id : 0;
      continue;
    }
    const int w = world_rank_of(comm, p);
    if (w >= 0) peers[n++] = w;
  }
  publish_wait(call, t0, comm ? comm->id : 0, tag == MPI_ANY_TAG ? -1 : tag, peers, n, false, any_comm);
}

void P2PBlock::end(int dest, std::uint64_t sent_bytes, int source, std::uint64_t recvd_bytes) noexcept {
  if (!g_record || call == 0) return;
  c3::RecordV6& v6 = c3::v6_of(*g_record);
  if (dest >= 0) {
    // A send alone's time is the wait for a late receiver (a send with a
    // receive: the receive's wait, counted below).
    count_sent(v6, world_rank_of(comm, dest), sent_bytes, source >= 0 ? 0 : now_ns() - t0);
    add_op();
  }
  if (source >= 0) {  // a receive's wait: the late-sender model
    count_recvd(v6, world_rank_of(comm, source), recvd_bytes, now_ns() - t0, true);
    add_op();
  }
  publish_done();
}

void p2p_started(MPI_Request req, bool recv, MPI_Comm mc, int peer, int tag, std::uint64_t bytes,
                 bool persistent) noexcept {
  if (!g_record || req == MPI_REQUEST_NULL) return;
  const CommSlot* c = comm_lookup(mc);
  std::int32_t w = peer == MPI_ANY_SOURCE ? static_cast<std::int32_t>(c3::kPeerAny)
                   : peer == MPI_PROC_NULL ? -2
                                           : world_rank_of(c, peer);
  TableGuard guard;
  unsigned s = req_hash(req);
  int free_slot = -1;
  for (int i = 0; i < 32; ++i, s = (s + 1) % kReqSlots) {
    ReqSlot& r = g_reqs[s];
    if (r.used == 1 && r.req == req) { free_slot = static_cast<int>(s); break; }  // a reused handle
    if (r.used != 1 && free_slot < 0) free_slot = static_cast<int>(s);
    if (r.used == 0) break;
  }
  if (free_slot < 0) {  // a crowded neighbourhood: this request is not tracked
    g_untracked = true;
    return;
  }
  ReqSlot& r = g_reqs[free_slot];
  if (r.used == 1 && !r.persistent) --g_inflight;  // the handle's stale entry
  if (r.used == 1 && r.persistent && r.active) --g_active_persistent;
  if (!persistent) ++g_inflight;
  r = {req, c, bytes, w, tag == MPI_ANY_TAG || tag < 0 ? -1 : tag, 1, static_cast<std::uint8_t>(recv),
       static_cast<std::uint8_t>(persistent), 0};
  if (!recv && !persistent && w >= 0) {  // a send counts when it is posted
    count_sent(c3::v6_of(*g_record), w, bytes);
  }
}

void p2p_request_free(MPI_Request req) noexcept {
  if (!g_record) return;
  TableGuard guard;
  const int s = req_find(req);
  if (s >= 0) {
    // A request freed while it may still be in flight (a non-persistent
    // one is in the table until it completes; a persistent one while
    // started): its message goes on unseen, so no wait's directions are
    // complete from now on in this process.
    if (!g_reqs[s].persistent || g_reqs[s].active) g_untracked = true;
    if (!g_reqs[s].persistent) --g_inflight;
    if (g_reqs[s].persistent && g_reqs[s].active) --g_active_persistent;
    g_reqs[s].used = 2;
  }
}

void p2p_persistent_start(const MPI_Request* reqs, int n) noexcept {
  if (!g_record || !reqs) return;
  c3::RecordV6& v6 = c3::v6_of(*g_record);
  TableGuard guard;
  for (int i = 0; i < n; ++i) {
    const int s = req_find(reqs[i]);
    if (s < 0) continue;
    if (!g_reqs[s].active) {
      g_reqs[s].active = 1;
      ++g_active_persistent;
    }
    if (!g_reqs[s].recv && g_reqs[s].peer >= 0) count_sent(v6, g_reqs[s].peer, g_reqs[s].bytes);
  }
}

P2PWait::P2PWait(std::uint64_t c, const MPI_Request* reqs, int count, bool is_blocking) noexcept
    : call(c), blocking(is_blocking) {
  if (!g_record || !reqs || count <= 0) return;
  n = count < kMax ? count : kMax;
  over = count > kMax;  // the rest are not in the table
  int tracked = 0;
  std::int64_t awaited_np = 0, inflight = 0;  // the non-persistent ones among them; all in flight
  std::int64_t awaited_ap = 0, active_p = 0;  // the same of the active persistent ones
  bool unknown = over;                        // a request the table does not hold
  {
    // The table is read under its guard; no MPI call is made while it is held
    // (MPI_Request_get_status may run a generalized request's query function).
    TableGuard guard;
    inflight = g_inflight;
    active_p = g_active_persistent;
    unknown |= g_untracked;
    for (int i = 0; i < n; ++i) {
      slot[i] = req_find(reqs[i]);
      if (slot[i] < 0) {
        unknown |= reqs[i] != MPI_REQUEST_NULL;
        continue;
      }
      const ReqSlot& r = g_reqs[slot[i]];
      awaited_np += !r.persistent;
      awaited_ap += r.persistent && r.active;
      // (An inactive persistent request completes at once: nothing to wait for.)
      peer_of[i] = r.persistent && !r.active ? -2 : r.peer;
      inactive += r.persistent && !r.active;
      tag_of[i] = r.tag;
      recv_of[i] = r.recv;
      comm_of[i] = r.comm ? r.comm->id : 0;
      if (peer_of[i] != -2) ++tracked;  // MPI_PROC_NULL: nothing to wait for
    }
  }
  if (tracked == 0) return;
  any = true;
  pending = tracked;
  // A blocking wait on several messages: the ones that have arrived already
  // are not waited for (nor charged with the wait). MPI_Request_get_status
  // neither frees nor completes a request, but it may run the library's
  // progress engine: it is asked on one MPI_Waitall in 4 (a sample), and an
  // MPI_Waitall on several requests that was not sampled charges nobody.
  // MPI_Waitany and MPI_Waitsome return as soon as one message is there, so
  // the ones they return are the ones waited for: they are charged.
  static unsigned tick = 0;
  const bool several = blocking && tracked >= 2;
  const bool check = several && call == SCOUT_P2P_WAITALL && (++tick & 3) == 0;
  uncharged = several && call == SCOUT_P2P_WAITALL && !check;
  for (int i = 0; i < n && check; ++i) {
    int flag = 0;
    if (slot[i] >= 0 && peer_of[i] != -2 && PMPI_Request_get_status(reqs[i], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
        flag) {
      arrived[i / 64] |= std::uint64_t{1} << (i % 64);
      --pending;
    }
  }
  // Directions only when these are all the requests in flight, each known
  // (the active persistent ones too).
  dirs_known = !unknown && awaited_np == inflight && awaited_ap == active_p;
  t0 = now_ns();
  collect(t0);
}

// What the requests not arrived and not completed yet wait for: peers (with
// each one's directions and tags), communicator and tag, published when the
// call blocks (at its start, and again after each partial completion).
void P2PWait::collect(std::uint64_t at) noexcept {
  npeers = 0;
  more = over;
  comm_id = any_comm = 0;
  tag = -2;
  dirs[0] = dirs[1] = 0;
  for (auto& way : tags)
    for (auto& t : way) t = c3::kTagNone;
  for (int i = 0; i < n; ++i) {
    if (slot[i] < 0 || peer_of[i] == -2 || was_there(i) || is_done(i)) continue;
    const std::uint64_t id = comm_of[i];
    comm_id = (comm_id == 0 || comm_id == id) ? id : ~std::uint64_t{0};
    if (peer_of[i] == c3::kPeerAny) any_comm = id;
    if (peer_of[i] >= 0 || peer_of[i] == c3::kPeerAny) {
      add_peer(peers, npeers, more, peer_of[i]);
      for (int k = 0; k < npeers; ++k)  // which way it goes, by the peer's place in the list, and its tag
        if (peers[k] == peer_of[i]) {
          const int way = recv_of[i] ? 0 : 1;
          dirs[way] |= std::uint64_t{1} << k;
          std::int64_t& t = tags[way][k];
          t = t == c3::kTagNone ? (tag_of[i] >= 0 ? tag_of[i] : c3::kTagSeveral) : t == tag_of[i] ? t : c3::kTagSeveral;
        }
    }
    // One tag for all the awaited requests, or -1.
    tag = tag == -2 ? tag_of[i] : tag == tag_of[i] ? tag : -1;
  }
  if (comm_id == ~std::uint64_t{0}) comm_id = 0;
  if (tag < 0) tag = -1;
  if (blocking)
    publish_wait(call, at, comm_id, tag, peers, npeers, more, any_comm, dirs_known ? dirs : nullptr,
                 dirs_known ? tags : nullptr);
}

namespace {
// One tracked request completed: counts it; frees the slot unless persistent.
// `charged` lists the peers already charged with this call's wait.
void account(int s, const MPI_Status* st, std::uint64_t waited, bool timed, std::int64_t* charged,
             int& ncharged) noexcept {
  if (s < 0) return;
  ReqSlot& r = g_reqs[s];
  if (r.used != 1) return;
  if (r.persistent && !r.active) return;  // not started: no message completed
  if (r.persistent) {
    r.active = 0;
    --g_active_persistent;
  }
  c3::RecordV6& v6 = c3::v6_of(*g_record);
  if (r.recv) {
    int w = r.peer;
    if (st && st != MPI_STATUS_IGNORE && st->MPI_SOURCE >= 0) w = world_rank_of(r.comm, st->MPI_SOURCE);
    std::uint64_t wait = waited;
    for (int i = 0; i < ncharged; ++i)
      if (charged[i] == w) wait = 0;
    if (wait && ncharged < 16) charged[ncharged++] = w;
    if (w >= 0) count_recvd(v6, w, r.bytes, wait, timed);
    if (r.peer != -2) add_op();
  } else if (r.peer != -2) {
    add_op();  // its bytes were counted when it was posted (or started)
  }
  if (!r.persistent) {
    r.used = 2;
    --g_inflight;
  }
}
}  // namespace

void P2PWait::completed_all(const MPI_Status* statuses) noexcept {
  if (!any) return;
  const std::uint64_t waited = blocking && !uncharged ? now_ns() - t0 : 0;
  TableGuard guard;
  for (int i = 0; i < n; ++i)
    if (!is_done(i))
      account(slot[i], statuses && statuses != MPI_STATUSES_IGNORE ? &statuses[i] : nullptr,
              was_there(i) ? 0 : waited, blocking && !uncharged, charged, ncharged);
  publish_done();
}

void P2PWait::completed_one(int index, const MPI_Status* status) noexcept {
  if (!any) return;
  const std::uint64_t waited = blocking && !uncharged ? now_ns() - t0 : 0;
  std::int64_t charged[16];
  int nc = 0;
  TableGuard guard;
  if (index >= 0 && index < n && index != MPI_UNDEFINED)
    account(slot[index], status, was_there(index) ? 0 : waited, blocking && !uncharged, charged, nc);
  publish_done();
}

void P2PWait::completed_some(int outcount, const int* indices, const MPI_Status* statuses) noexcept {
  if (!any) return;
  const std::uint64_t waited = blocking && !uncharged ? now_ns() - t0 : 0;
  std::int64_t charged[16];
  int nc = 0;
  TableGuard guard;
  if (outcount != MPI_UNDEFINED && indices)
    for (int k = 0; k < outcount; ++k)
      if (indices[k] >= 0 && indices[k] < n)
        account(slot[indices[k]], statuses && statuses != MPI_STATUSES_IGNORE ? &statuses[k] : nullptr,
                was_there(indices[k]) ? 0 : waited, blocking && !uncharged, charged, nc);
  publish_done();
}

// An MPI_Waitall the probe waits for with MPI_Waitsome: the requests that
// completed are counted now; publish_rest() then says the rank waits for
// the rest (a send that never matches stays, the receive that matched goes).
void P2PWait::partly_completed(int outcount, const int* indices, const MPI_Status* statuses) noexcept {
  if (!any || outcount == MPI_UNDEFINED || !indices) return;
  const std::uint64_t t = now_ns();
  {
    TableGuard guard;
    for (int k = 0; k < outcount; ++k) {
      const int i = indices[k];
      if (i < 0 || i >= n || is_done(i)) continue;
      account(slot[i], statuses && statuses != MPI_STATUSES_IGNORE ? &statuses[k] : nullptr,
              was_there(i) || uncharged ? 0 : t - t0, blocking && !uncharged, charged, ncharged);
      done[i / 64] |= std::uint64_t{1} << (i % 64);
      if (slot[i] >= 0 && peer_of[i] != -2 && !was_there(i)) --pending;
    }
  }
}

void P2PWait::publish_rest() noexcept {
  if (any && pending > 0) collect(t0);  // the wait began at t0: its age is the call's
}

void P2PWait::abandoned() noexcept {
  if (any) publish_done();
}

void P2PWait::none_completed() noexcept {
  if (!any || polling_now()) return;  // still polling: the wait began at the first Test
  publish_wait(call, now_ns(), comm_id, tag, peers, npeers, more, any_comm, dirs_known ? dirs : nullptr,
               dirs_known ? tags : nullptr);
  polling_began();
}

void p2p_poll(std::uint64_t call, MPI_Comm mc, int tag, int source) noexcept {
  if (!g_record || polling_now() || source == MPI_PROC_NULL) return;
  const CommSlot* c = comm_lookup(mc);
  std::int64_t peer = source == MPI_ANY_SOURCE ? c3::kPeerAny : world_rank_of(c, source);
  const int n = (peer >= 0 || peer == c3::kPeerAny) ? 1 : 0;
  publish_wait(call, now_ns(), c ? c->id : 0, tag == MPI_ANY_TAG ? -1 : tag, &peer, n, false,
               peer == c3::kPeerAny && c ? c->id : 0);
  polling_began();
}

void p2p_mprobe_comm(MPI_Comm comm) noexcept { g_last_mprobe_comm = comm; }
MPI_Comm p2p_mprobe_last() noexcept { return g_last_mprobe_comm; }

}  // namespace scout::probe
