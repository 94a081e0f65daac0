// The NCCL probe's completion tracking on the GPU (see nccl_probe.hpp): a FIFO
// of issued operations with their CUDA events, drained by one poller thread.
#include "probe/nccl_probe.hpp"

namespace scout::nccl_probe {

// --- Completion tracking ----------------------------------------------------
// A FIFO of issued operations with their two events, filled by the host
// (under g_lock) and drained by the completion thread. Each slot owns its
// events for good (created once), so the hot path never creates one.
OpSlot g_ops[kOps];
std::uint64_t g_head = 0;                 // next slot the host fills
std::atomic<std::uint64_t> g_tail{0};     // next slot the poller looks at
std::atomic<std::uint64_t> g_ended{0};    // slots [.., g_ended) have their end event
bool g_events_ok = false;
sem_t g_wake;  // the host wakes the completion thread when half the FIFO is in use
bool g_thread_started = false;
CUcontext g_ctx = nullptr;
std::uint64_t g_captured = 0, g_untracked = 0;

// Operations inside a group: their end events wait for the outermost End.
thread_local int t_group = 0;
thread_local GroupOp t_group_ops[kGroupOps];
thread_local int t_group_n = 0;

std::uint64_t poll_interval_ns() {
  static const std::uint64_t v = [] {
    const char* e = std::getenv("SCOUT_NCCL_POLL_US");
    long us = e ? std::strtol(e, nullptr, 10) : 5000;
    if (us < 50 || us > 1000000) us = 5000;
    return static_cast<std::uint64_t>(us) * 1000;
  }();
  return v;
}

void publish_gpu(c3::RecordV7& v7, const c3::GpuLive& g) {
  c3::seqlock_write_begin(v7.gpu_lock);
  const auto* src = reinterpret_cast<const std::uint64_t*>(&g);
  auto* dst = reinterpret_cast<std::uint64_t*>(&v7.gpu);
  for (std::size_t i = 0; i < sizeof g / 8; ++i) __atomic_store_n(dst + i, src[i], __ATOMIC_RELAXED);
  c3::seqlock_write_end(v7.gpu_lock);
}

// The point-to-point part from the GPU's view: while the GPU is inside an
// ncclSend/ncclRecv, that call and its peer (the wait-for graph reads it);
// `ops` counts the sends and receives the GPU completed.
void publish_p2p(c3::RecordV6& v6, std::uint64_t call, std::int64_t peer, std::uint64_t comm, std::uint64_t since,
                 std::uint64_t ops) {
  c3::p2p_write_begin(v6);
  c3::rec_store(v6.p2p.ops, ops);
  c3::rec_store(v6.p2p.call, call);
  c3::rec_store(v6.p2p.entry_ns, since);
  c3::rec_store(v6.p2p.comm_id, comm);
  c3::rec_store(v6.p2p.tag, std::int64_t{-1});
  c3::rec_store(v6.p2p.npeers, std::uint64_t{call != 0 && peer >= 0 ? 1u : 0u});
  c3::rec_store(v6.p2p.peers[0], peer);
  c3::rec_store(v6.p2p.more_peers, std::uint64_t{0});
  c3::rec_store(v6.p2p.any_comm, std::uint64_t{0});
  c3::p2p_write_end(v6);
}

void* poller(void*) {
  if (g_ctx) g_cu.ctx_set(g_ctx);
  c3::RankRecord* r = g_rec;
  c3::RecordV7& v7 = c3::v7_of(*r);
  c3::GpuLive g{};
  g.tracking = 1;
  CUevent prev_end = nullptr;
  std::uint64_t t_gpu = 0;  // the GPU timeline, chained through elapsed times
  c3::RecordV6& v6 = c3::v6_of(*r);
  std::uint64_t p2p_ops = 0, p2p_call = 0, p2p_seq = 0, p2p_since = 0;
  // Every interval while operations are outstanding; ten times slower (a
  // heartbeat) while the GPU has nothing of ours to finish.
  const timespec busy{static_cast<time_t>(poll_interval_ns() / 1000000000ULL),
                      static_cast<long>(poll_interval_ns() % 1000000000ULL)};
  const std::uint64_t idle_ns = poll_interval_ns() * 10;
  const timespec idle{static_cast<time_t>(idle_ns / 1000000000ULL), static_cast<long>(idle_ns % 1000000000ULL)};
  for (;;) {
    std::uint64_t tail = g_tail.load(std::memory_order_relaxed);
    const std::uint64_t ended = g_ended.load(std::memory_order_acquire);
    bool changed = false;
    std::uint64_t inside_call = 0, inside_seq = 0, inside_comm = 0;
    std::int64_t inside_peer = -1;
    while (tail < ended) {
      OpSlot& o = g_ops[tail % kOps];
      if (g.started < o.seq) {
        CUresult q = g_cu.event_query(o.start);
        if (q == CUDA_ERROR_NOT_READY) break;
        if (q != CUDA_SUCCESS) g.error = static_cast<std::uint64_t>(q);
        float gap = 0;
        if (prev_end && g_cu.event_elapsed(&gap, prev_end, o.start) == CUDA_SUCCESS && gap > 0) {
          t_gpu += static_cast<std::uint64_t>(static_cast<double>(gap) * 1e6);
          g.gpu_outside_ns += static_cast<std::uint64_t>(static_cast<double>(gap) * 1e6);
        } else if (!prev_end) {
          t_gpu = now_ns();
        }
        g.started = o.seq;
        if (o.ops_slot >= 0) __atomic_store_n(&v7.comm_ops[o.ops_slot].begun, o.cseq, __ATOMIC_RELEASE);
        c3::ring_enter(*r, o.seq, o.fp, o.kind, o.comm, t_gpu);
        changed = true;
      }
      CUresult q = g_cu.event_query(o.end);
      if (q == CUDA_ERROR_NOT_READY) {
        if (o.kind == c3::kSend || o.kind == c3::kRecv) {
          inside_call = o.kind == c3::kSend ? SCOUT_P2P_NCCL_SEND : SCOUT_P2P_NCCL_RECV;
          inside_seq = o.seq;
          inside_peer = o.peer;
          inside_comm = o.comm;
        }
        break;
      }
      if (o.kind == c3::kSend || o.kind == c3::kRecv) ++p2p_ops;
      if (q != CUDA_SUCCESS) g.error = static_cast<std::uint64_t>(q);
      float inside = 0;
      if (g_cu.event_elapsed(&inside, o.start, o.end) == CUDA_SUCCESS && inside > 0) {
        t_gpu += static_cast<std::uint64_t>(static_cast<double>(inside) * 1e6);
        g.gpu_inside_ns += static_cast<std::uint64_t>(static_cast<double>(inside) * 1e6);
      }
      c3::ring_exit(*r, o.seq, t_gpu);
      if (o.ops_slot >= 0) __atomic_store_n(&v7.comm_ops[o.ops_slot].done, o.cseq, __ATOMIC_RELEASE);
      g.done = o.seq;
      g.done_ns = now_ns();
      prev_end = o.end;
      g_tail.store(++tail, std::memory_order_release);
      changed = true;
    }
    if (inside_call != p2p_call || inside_seq != p2p_seq || changed) {
      if (inside_call != 0 && inside_seq != p2p_seq) p2p_since = now_ns();
      p2p_call = inside_call;
      p2p_seq = inside_seq;
      publish_p2p(v6, p2p_call, inside_peer, inside_comm, p2p_call ? p2p_since : 0, p2p_ops);
    }
    g.poll_ns = now_ns();
    g.captured = __atomic_load_n(&g_captured, __ATOMIC_RELAXED);
    g.untracked = __atomic_load_n(&g_untracked, __ATOMIC_RELAXED);
    (void)changed;
    publish_gpu(v7, g);
    const timespec& d = tail < g_ended.load(std::memory_order_acquire) || tail < __atomic_load_n(&g_head, __ATOMIC_RELAXED)
                            ? busy
                            : idle;
    timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += d.tv_sec;
    until.tv_nsec += d.tv_nsec;
    if (until.tv_nsec >= 1000000000L) until.tv_sec += 1, until.tv_nsec -= 1000000000L;
    while (sem_clockwait(&g_wake, CLOCK_MONOTONIC, &until) != 0 && errno == EINTR) {
    }
  }
  return nullptr;
}

bool events_ready(CUstream stream) {
  if (g_events_ok) return true;
  if (!g_cu.ok) return false;
  CUcontext ctx = nullptr;
  if (g_cu.stream_ctx(stream, &ctx) != CUDA_SUCCESS || !ctx) {
    if (g_cu.ctx_current(&ctx) != CUDA_SUCCESS || !ctx) return false;
  }
  for (auto& o : g_ops)
    if (g_cu.event_create(&o.start, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
        g_cu.event_create(&o.end, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
      return false;
  g_ctx = ctx;
  g_events_ok = true;
  return true;
}

void start_poller() {
  if (g_thread_started) return;
  g_thread_started = true;
  sem_init(&g_wake, 0, 0);
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  // The poller must not keep the process alive nor take signals meant for it.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  if (pthread_create(&t, &a, poller, nullptr) == 0) pthread_setname_np(t, "scout-nccl-poll");
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&a);
}

// Before an operation is handed to NCCL: numbered, published, start event.
// Returns the FIFO slot + 1 (0: untracked).
std::uint64_t op_begin(std::uint32_t kind, ncclComm_t comm, std::size_t count, ncclDataType_t dt, std::uint64_t op,
                       std::int64_t root_or_peer, cudaStream_t s) noexcept {
  c3::RankRecord* r = __atomic_load_n(&g_rec, __ATOMIC_ACQUIRE);
  if (!r) return 0;
  auto stream = reinterpret_cast<CUstream>(s);
  const std::uint64_t t = now_ns();
  lock();
  Comm* cm = comm_find(comm);
  const std::uint64_t cid = cm ? cm->id : 0;
  const int ops_slot = cm ? cm->ops_slot : -1;
  const std::uint64_t cseq = cm ? ++cm->cseq : 0;
  if (ops_slot >= 0) __atomic_store_n(&c3::v7_of(*r).comm_ops[ops_slot].issued, cseq, __ATOMIC_RELEASE);
  const std::uint64_t fp = probe::fingerprint_of(kind, cid, count, static_cast<std::uint64_t>(dt) + 1, op,
                                                 static_cast<std::uint64_t>(root_or_peer));
  const std::uint64_t seq = ++g_seq;
  g_outside += t - g_last_exit;
  g_last_exit = t;
  c3::record_write_begin(*r);
  c3::rec_store(r->live.seq, seq);
  c3::rec_store(r->live.fingerprint, fp);
  c3::rec_store(r->live.comm_id, cid);
  c3::rec_store(r->live.kind, std::uint64_t{kind});
  c3::rec_store(r->live.count, static_cast<std::int64_t>(count));
  c3::rec_store(r->live.datatype, static_cast<std::uint64_t>(dt) + 1);
  c3::rec_store(r->live.op, op);
  c3::rec_store(r->live.root, root_or_peer);
  c3::rec_store(r->live.entry_ns, t);
  c3::rec_store(r->live.exit_ns, t);
  c3::rec_store(r->live.outside_ns, g_outside);
  c3::record_write_end(*r);
  std::uint64_t slot = 0;
  CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!events_ready(stream)) {
    ++g_untracked;
  } else if (g_cu.stream_capturing(stream, &cap) == CUDA_SUCCESS && cap != CU_STREAM_CAPTURE_STATUS_NONE) {
    ++g_captured;  // replayed later by the graph: no event to wait for
  } else if (g_head - g_tail.load(std::memory_order_acquire) >= kOps - 1) {
    ++g_untracked;  // the GPU is far behind: counted, not tracked
  } else {
    OpSlot& o = g_ops[g_head % kOps];
    o.seq = seq;
    o.fp = fp;
    o.kind = kind;
    o.comm = cid;
    o.ops_slot = ops_slot;
    o.cseq = cseq;
    o.peer = -1;
    if (kind == c3::kSend || kind == c3::kRecv) {
      // A comm rank is a world rank on a communicator over the whole job.
      Comm* c = comm_find(comm);
      if (c && c->size == r->world_size && root_or_peer >= 0 && root_or_peer < c->size) o.peer = root_or_peer;
    }
    o.ended = false;
    if (g_cu.event_record(o.start, stream) == CUDA_SUCCESS) slot = ++g_head;  // slot index + 1
    else ++g_untracked;
    start_poller();
    // Half the FIFO in use: the completion thread retires now rather than at
    // its next poll (one post per crossing, so rarely a system call).
    if (g_head - g_tail.load(std::memory_order_relaxed) == kOps / 2) sem_post(&g_wake);
  }
  unlock();
  return slot;
}

// After NCCL accepted it (or, in a group, at the outermost End): end event.
void op_end(std::uint64_t slot, cudaStream_t s) noexcept {
  if (!slot) return;
  lock();
  OpSlot& o = g_ops[(slot - 1) % kOps];
  if (g_cu.event_record(o.end, reinterpret_cast<CUstream>(s)) != CUDA_SUCCESS) ++g_untracked;
  o.ended = true;
  // The poller reads slots in order: publish the prefix that has its end.
  std::uint64_t e = g_ended.load(std::memory_order_relaxed);
  while (e < g_head && g_ops[e % kOps].ended) ++e;
  g_ended.store(e, std::memory_order_release);
  unlock();
}

}  // namespace scout::nccl_probe
