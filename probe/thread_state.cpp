// probe: a threaded program's part of the record (version 8, see
// probe_state.hpp): each thread's slot and each communicator's progress
// entry, claimed once; no allocation, the table guard only to claim.
#include <sys/syscall.h>
#include <unistd.h>

#include "probe/probe_state.hpp"

namespace scout::probe {

namespace {
SCOUT_TLS c3::ThreadSlot* t_slot = nullptr;
SCOUT_TLS bool t_slot_tried = false;
SCOUT_TLS std::uint64_t t_ops = 0;  // this thread's messages
int g_threads_claimed = 0;
}  // namespace

c3::ThreadSlot* thread_slot() noexcept {
  if (!g_threaded || !g_record) return nullptr;
  if (t_slot_tried) return t_slot;
  t_slot_tried = true;
  c3::RecordV8& r8 = c3::v8_of(*g_record);
  const int i = __atomic_fetch_add(&g_threads_claimed, 1, __ATOMIC_RELAXED);
  if (i >= static_cast<int>(c3::kThreadSlots)) {
    __atomic_fetch_add(&r8.threads_full, 1, __ATOMIC_RELAXED);
    return nullptr;
  }
  c3::ThreadSlot& t = r8.threads[i];
  __atomic_store_n(&t.tid, static_cast<std::uint64_t>(syscall(SYS_gettid)), __ATOMIC_RELEASE);
  return t_slot = &t;
}

c3::CommProgress* comm_progress(std::uint64_t id) noexcept {
  if (!g_threaded || !g_record || id == 0) return nullptr;
  c3::RecordV8& r8 = c3::v8_of(*g_record);
  std::uint64_t n = __atomic_load_n(&r8.comm_progress_count, __ATOMIC_ACQUIRE);
  for (std::uint64_t i = 0; i < n; ++i)
    if (__atomic_load_n(&r8.comm_progress[i].id, __ATOMIC_RELAXED) == id) return &r8.comm_progress[i];
  if (n >= c3::kProgressComms) {  // full for good (entries are never given back): counted, not followed
    __atomic_fetch_add(&r8.comms_full, 1, __ATOMIC_RELAXED);
    return nullptr;
  }
  TableGuard guard;
  n = __atomic_load_n(&r8.comm_progress_count, __ATOMIC_RELAXED);
  for (std::uint64_t i = 0; i < n; ++i)
    if (__atomic_load_n(&r8.comm_progress[i].id, __ATOMIC_RELAXED) == id) return &r8.comm_progress[i];
  if (n >= c3::kProgressComms) {
    __atomic_fetch_add(&r8.comms_full, 1, __ATOMIC_RELAXED);
    return nullptr;
  }
  __atomic_store_n(&r8.comm_progress[n].id, id, __ATOMIC_RELAXED);
  __atomic_store_n(&r8.comm_progress_count, n + 1, __ATOMIC_RELEASE);
  return &r8.comm_progress[n];
}

void thread_wait(std::uint64_t call, std::uint64_t t, std::uint64_t comm_id, std::int64_t tag,
                 const std::int64_t* peers, int n, bool more, std::uint64_t any_comm) noexcept {
  c3::ThreadSlot* ts = thread_slot();
  if (!ts) return;
  seq_begin(ts->lock);
  c3::rec_store(ts->p2p.call, call);
  c3::rec_store(ts->p2p.entry_ns, t);
  c3::rec_store(ts->p2p.comm_id, comm_id);
  c3::rec_store(ts->p2p.tag, tag);
  for (int i = 0; i < n; ++i) c3::rec_store(ts->p2p.peers[i], peers[i]);
  c3::rec_store(ts->p2p.npeers, static_cast<std::uint64_t>(n));
  c3::rec_store(ts->p2p.more_peers, std::uint64_t{more});
  c3::rec_store(ts->p2p.any_comm, any_comm);
  seq_end(ts->lock);
}

void thread_wait_done() noexcept {
  c3::ThreadSlot* ts = thread_slot();
  if (!ts) return;
  seq_begin(ts->lock);
  c3::rec_store(ts->p2p.call, std::uint64_t{0});
  c3::rec_store(ts->p2p.npeers, std::uint64_t{0});
  c3::rec_store(ts->p2p.ops, t_ops);
  seq_end(ts->lock);
}

void thread_count_op() noexcept { ++t_ops; }

}  // namespace scout::probe
