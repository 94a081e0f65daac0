// probe state: record setup at MPI_Init, communicator identities, and the
// hot-path enter/exit updates of the rank record (see probe_state.hpp).
#include "probe/probe_state.hpp"

#include "probe/fault_injection.hpp"
#include "probe/record_shm.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>

#include "libc3/signature.hpp"

namespace scout::probe {

c3::RankRecord* g_record = nullptr;
bool g_threaded = false;
int TableGuard::lock_ = 0;
ProbeClock g_clock;

void clock_calibrate() noexcept {
#if defined(__x86_64__)
  // Only an invariant TSC (constant and nonstop) measures time.
  std::FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[4096];
  bool constant = false, nonstop = false;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "flags", 5) != 0) continue;
    constant = std::strstr(line, " constant_tsc") != nullptr;
    nonstop = std::strstr(line, " nonstop_tsc") != nullptr;
    break;
  }
  std::fclose(f);
  if (!constant || !nonstop) return;
  const std::uint64_t ns_a = clock_ns(), tsc_a = __builtin_ia32_rdtsc();
  timespec pause{0, 5000000};  // 5 ms: relative error ~1e-5
  nanosleep(&pause, nullptr);
  const std::uint64_t ns_b = clock_ns(), tsc_b = __builtin_ia32_rdtsc();
  if (tsc_b <= tsc_a || ns_b <= ns_a) return;
  g_clock.ns_per_tick = static_cast<double>(ns_b - ns_a) / static_cast<double>(tsc_b - tsc_a);
  g_clock.tsc0 = tsc_b;
  g_clock.ns0 = ns_b;
  g_clock.use_tsc = true;
#endif
}

namespace {

char g_shm_name[128];
std::size_t g_record_bytes = sizeof(c3::RecordV6);
std::uint64_t g_last_exit_ns = 0;
std::uint64_t g_entry_ns = 0;
std::uint64_t g_inside_ns = 0;
std::uint64_t g_outside_ns = 0;
std::uint64_t g_seq = 0;

// Communicator identity table: open addressing keyed by handle, filled by the
// constructor wrappers (not the hot path). Lookups never allocate.
constexpr int kCommSlots = 512;
CommSlot g_comms[kCommSlots];  // comm == nullptr: never used
// World ranks of each communicator's (remote) group, for point-to-point
// peers: a fixed pool filled at registration (a communicator that does not
// fit has no table and its peers show as unknown).
constexpr int kWorldPool = 1 << 18;
int g_world_pool[kWorldPool];
int g_world_pool_used = 0;
const MPI_Comm kTombstone = reinterpret_cast<MPI_Comm>(std::uintptr_t{1});
// Scratch for membership translation, static so registration never mallocs.
constexpr int kMaxMembers = 65536;
int g_ranks_in[kMaxMembers];
int g_ranks_world[kMaxMembers];
std::uint64_t g_members[kMaxMembers];
// How many communicators with a given membership this rank created: two
// dups of the same group must have different identities.
constexpr int kMemberCounts = 256;
std::uint64_t g_member_hash[kMemberCounts];
std::uint64_t g_member_count[kMemberCounts];

unsigned comm_slot(MPI_Comm c) noexcept {
  auto v = reinterpret_cast<std::uintptr_t>(c);
  v ^= v >> 17;
  v *= 0x9E3779B97F4A7C15ULL;
  return static_cast<unsigned>(v >> 40) % kCommSlots;
}

// Pending nonblocking collectives.
constexpr int kPending = 64;
MPI_Request g_pending[kPending];
std::uint64_t g_pending_seq[kPending];  // their collective seq (ring slot)
c3::CommProgress* g_pending_prog[kPending];  // their communicator's progress entry (threaded)

// Threads (record version 8).
SCOUT_TLS c3::CommProgress* t_coll_prog = nullptr;  // the blocking collective this thread is inside
int g_pending_count = 0;

}  // namespace

std::uint64_t compute_identity(MPI_Comm comm) noexcept {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  MPI_Group g, wg;
  if (inter) PMPI_Comm_remote_group(comm, &g); else PMPI_Comm_group(comm, &g);
  int n = 0;
  PMPI_Group_size(g, &n);
  if (n > kMaxMembers) n = kMaxMembers;
  for (int i = 0; i < n; ++i) g_ranks_in[i] = i;
  PMPI_Comm_group(MPI_COMM_WORLD, &wg);
  PMPI_Group_translate_ranks(g, n, g_ranks_in, wg, g_ranks_world);
  PMPI_Group_free(&g);
  PMPI_Group_free(&wg);
  for (int i = 0; i < n; ++i) g_members[i] = static_cast<std::uint64_t>(g_ranks_world[i]);
  std::uint64_t h = c3::signature(g_members, static_cast<std::size_t>(n) * 8,
                                  {.element_type = inter ? 100u : 99u});
  // Occurrence number of this membership.
  std::uint64_t k = 0;
  for (int i = 0; i < kMemberCounts; ++i) {
    if (g_member_count[i] != 0 && g_member_hash[i] == h) { k = g_member_count[i]++; break; }
    if (g_member_count[i] == 0) { g_member_hash[i] = h; g_member_count[i] = 1; break; }
  }
  std::uint64_t words[2] = {h, k};
  return c3::signature_words(words);
}

namespace {
// Publishes a new communicator's membership in the record (append-only; the
// count is stored last so a reader never sees a half-written entry).
void publish_comm(std::uint64_t id, int n) noexcept {
  c3::RankRecord* r = g_record;
  if (!r) return;
  std::uint64_t k = __atomic_load_n(&r->comm_count, __ATOMIC_RELAXED);
  if (k >= c3::kCommTable) return;
  for (std::uint64_t i = 0; i < k; ++i)
    if (r->comms[i].id == id) return;  // a handle reused for the same identity
  c3::CommEntry& e = r->comms[k];
  e.id = id;
  e.size = static_cast<std::uint32_t>(n);
  e.stored = static_cast<std::uint32_t>(std::min<int>(n, static_cast<int>(c3::kCommMembers)));
  for (std::uint32_t i = 0; i < e.stored; ++i) e.members[i] = g_ranks_world[i];
  __atomic_store_n(&r->comm_count, k + 1, __ATOMIC_RELEASE);
}
}  // namespace

void comm_register(MPI_Comm comm) noexcept {
  if (comm == MPI_COMM_NULL) return;
  // Threads may create communicators at once: the scratch arrays, the
  // membership counts and the tables are shared (the guard is held across
  // local group queries only, never a communicating call).
  TableGuard guard;
  std::uint64_t id = compute_identity(comm);
  int members = 0;
  {
    MPI_Group g;
    PMPI_Comm_group(comm, &g);
    PMPI_Group_size(g, &members);
    PMPI_Group_free(&g);
  }
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (!inter) publish_comm(id, members);  // g_ranks_world still holds its members
  // Point-to-point ranks name members of the (remote) group compute_identity
  // translated: keep that table (MPI_COMM_WORLD needs none).
  const int* world = nullptr;
  int nworld = 0;
  if (comm != MPI_COMM_WORLD) {
    MPI_Group g;
    if (inter) PMPI_Comm_remote_group(comm, &g); else PMPI_Comm_group(comm, &g);
    PMPI_Group_size(g, &nworld);
    PMPI_Group_free(&g);
    if (nworld <= kMaxMembers && g_world_pool_used + nworld <= kWorldPool) {
      std::memcpy(g_world_pool + g_world_pool_used, g_ranks_world, sizeof(int) * static_cast<std::size_t>(nworld));
      world = g_world_pool + g_world_pool_used;
      g_world_pool_used += nworld;
    } else {
      nworld = 0;
    }
  }
  unsigned s = comm_slot(comm);
  for (int i = 0; i < kCommSlots; ++i, s = (s + 1) % kCommSlots) {
    if (g_comms[s].comm == comm || g_comms[s].comm == nullptr || g_comms[s].comm == kTombstone) {
      // The handle last: a lookup that matches it sees the rest complete.
      g_comms[s].id = id;
      g_comms[s].world = world;
      g_comms[s].size = comm == MPI_COMM_WORLD ? members : nworld;  // world: its size (no table)
      g_comms[s].is_world = comm == MPI_COMM_WORLD;
      __atomic_store_n(&g_comms[s].comm, comm, __ATOMIC_RELEASE);
      return;
    }
  }
}

void comm_forget(MPI_Comm comm) noexcept {
  TableGuard guard;
  unsigned s = comm_slot(comm);
  for (int i = 0; i < kCommSlots; ++i, s = (s + 1) % kCommSlots) {
    if (g_comms[s].comm == comm) { g_comms[s].id = 0; g_comms[s].comm = kTombstone; return; }
    if (g_comms[s].comm == nullptr) return;
  }
}

std::uint64_t current_seq() noexcept { return g_seq; }

const CommSlot* comm_lookup(MPI_Comm comm) noexcept {
  // Codes talk on one communicator most of the time: remember the last.
  static const CommSlot* last = nullptr;
  if (last && last->comm == comm) return last;
  unsigned s = comm_slot(comm);
  for (int i = 0; i < kCommSlots; ++i, s = (s + 1) % kCommSlots) {
    if (g_comms[s].comm == comm) return last = &g_comms[s];
    if (g_comms[s].comm == nullptr) break;
  }
  return nullptr;  // created by a constructor we do not wrap (e.g. MPI_Comm_idup)
}

std::uint64_t comm_identity(MPI_Comm comm) noexcept {
  const CommSlot* c = comm_lookup(comm);
  return c ? c->id : 0;
}

int world_rank_of(const CommSlot* c, int rank) noexcept {
  if (rank < 0) return rank;  // MPI_ANY_SOURCE, MPI_PROC_NULL
  if (!c) return -3;          // unknown communicator
  // A rank beyond the communicator (a program's bug: MPI refuses the call)
  // is no peer to publish: scoutd would refuse the whole record for it.
  if (rank >= c->size) return -3;
  if (c->is_world) return rank;
  return c->world[rank];
}

void probe_init() noexcept {
  const char* job = nullptr;
  const char* step = nullptr;
  if (!record_env("scout-probe", &job, &step)) return;
  int rank = 0, size = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  clock_calibrate();
  faults::parse(rank);
  parse_outsig(rank);
  // Version 8 for a threaded program (progress per communicator and thread),
  // else 10 (version 6, then which way a completion call's requests go and
  // with which tags).
  g_record_bytes = g_threaded ? sizeof(c3::RecordV8) : sizeof(c3::RecordV10);
  c3::RankRecord* r = record_create("scout-probe", job, step, rank, size,
                                    g_threaded ? c3::kRecordVersionMt : c3::kRecordVersionTags, g_record_bytes,
                                    g_shm_name, sizeof g_shm_name);
  if (!r) return;
  if (g_threaded) {
    c3::v8_of(*r).source = SCOUT_SOURCE_MPI;
    c3::v8_of(*r).threaded = 1;
  } else {
    c3::v9_of(*r).source = SCOUT_SOURCE_MPI;
  }
  r->start_ns = now_ns();
  record_publish(*r);
  g_last_exit_ns = r->start_ns;
  g_record = r;
  comm_register(MPI_COMM_WORLD);
  comm_register(MPI_COMM_SELF);
  install_fatal_handlers();
  install_mpi_error_handler();
}

void probe_finalize() noexcept {
  c3::RankRecord* r = g_record;
  if (!r || r->pid != static_cast<std::int32_t>(getpid())) return;  // a forked child's MPI_Finalize: not this rank's
  g_record = nullptr;
  record_close(r, g_shm_name, g_record_bytes);
}

std::uint64_t coll_enter(std::uint32_t kind, MPI_Comm comm, std::int64_t count, MPI_Datatype dt, MPI_Op op,
                         std::int64_t root) noexcept {
  c3::RankRecord* r = g_record;
  if (!r) return 0;
  const std::uint64_t t = now_ns();
  const std::uint64_t cid = comm_identity(comm);
  std::uint64_t tsize = 0;
  const std::uint64_t dtc = datatype_code(dt, &tsize), opc = op_code(op);
  // What MPI requires alike: a reduction's count, datatype and op; the others'
  // bytes (one type signature, many spellings); none for count -1 (v-variants).
  const auto n = static_cast<std::uint64_t>(count), amount = count < 0 ? 0 : opc ? n : n * tsize;
  const std::uint64_t fp = fingerprint_of(kind, cid, amount, opc ? dtc : 0, opc, static_cast<std::uint64_t>(root));
  g_outside_ns += t - g_last_exit_ns;
  g_entry_ns = t;
  const std::uint64_t seq = g_threaded ? __atomic_add_fetch(&g_seq, 1, __ATOMIC_RELAXED) : ++g_seq;
  p2p_poll_clear();
  rec_begin(*r);
  // Threads enter in any order: the published position only moves forward.
  c3::rec_store(r->live.seq, g_threaded ? std::max(seq, __atomic_load_n(&r->live.seq, __ATOMIC_RELAXED)) : seq);
  c3::rec_store(r->live.fingerprint, fp);
  c3::rec_store(r->live.comm_id, cid);
  c3::rec_store(r->live.kind, std::uint64_t{kind});
  c3::rec_store(r->live.count, count);
  c3::rec_store(r->live.datatype, dtc);
  c3::rec_store(r->live.op, opc);
  c3::rec_store(r->live.root, root);
  c3::rec_store(r->live.in_collective, std::uint64_t{1});
  c3::rec_store(r->live.entry_ns, t);
  c3::rec_store(r->live.outside_ns, g_outside_ns);
  rec_end(*r);
  c3::ring_enter(*r, seq, fp, kind, cid, t);
  if (g_threaded) {
    // Threads: this communicator's own count, and this thread's collective
    // (MPI orders collectives per communicator, one thread at a time each).
    std::uint64_t ordinal = 0;
    c3::CommProgress* p = comm_progress(cid);
    if (p) {
      seq_begin(p->lock);
      ordinal = __atomic_load_n(&p->entered, __ATOMIC_RELAXED) + 1;
      c3::rec_store(p->entered, ordinal);
      c3::rec_store(p->fingerprint, fp);
      c3::rec_store(p->kind, std::uint64_t{kind});
      c3::rec_store(p->entry_ns, t);
      seq_end(p->lock);
    }
    t_coll_prog = p;
    if (c3::ThreadSlot* ts = thread_slot()) {
      seq_begin(ts->lock);
      c3::rec_store(ts->coll_kind, std::uint64_t{kind});
      c3::rec_store(ts->coll_comm, cid);
      c3::rec_store(ts->coll_ordinal, ordinal);
      c3::rec_store(ts->coll_entry_ns, t);
      seq_end(ts->lock);
    }
  }
  if (__builtin_expect(faults::g_delay_active, false)) faults::delay(comm, seq);
  return seq;
}

namespace {
// The live part of an exit; returns the time. The ring entry is closed by
// the caller (a nonblocking collective's entry closes when it completes).
// A collective of a threaded program's communicator completed.
void progress_completed(c3::CommProgress* p, std::uint64_t t) noexcept {
  if (!p) return;
  seq_begin(p->lock);
  c3::rec_store(p->completed, std::min(__atomic_load_n(&p->completed, __ATOMIC_RELAXED) + 1,
                                       __atomic_load_n(&p->entered, __ATOMIC_RELAXED)));
  c3::rec_store(p->exit_ns, t);
  seq_end(p->lock);
}
// The calling thread left its collective (returned, or a nonblocking one
// was started).
void thread_left_collective() noexcept {
  if (c3::ThreadSlot* ts = thread_slot()) {
    seq_begin(ts->lock);
    c3::rec_store(ts->coll_kind, std::uint64_t{0});
    seq_end(ts->lock);
  }
}

std::uint64_t live_exit(c3::RankRecord& r) noexcept {
  const std::uint64_t t = now_ns();
  g_inside_ns += t - g_entry_ns;
  g_last_exit_ns = t;
  rec_begin(r);
  c3::rec_store(r.live.in_collective, std::uint64_t{0});
  c3::rec_store(r.live.exit_ns, t);
  c3::rec_store(r.live.inside_ns, g_inside_ns);
  rec_end(r);
  return t;
}
}  // namespace

void coll_exit(std::uint64_t seq) noexcept {
  c3::RankRecord* r = g_record;
  if (!r) return;
  const std::uint64_t t = live_exit(*r);
  c3::ring_exit(*r, seq, t);
  if (g_threaded) {
    progress_completed(t_coll_prog, t);
    t_coll_prog = nullptr;
    thread_left_collective();
  }
}

void nb_started(MPI_Request req, std::uint64_t seq) noexcept {
  // A nonblocking collective returns at once: the rank is outside again
  // (live record), but in the ring the collective stays open until it
  // completes, so its duration covers the communication in flight.
  c3::RankRecord* r = g_record;
  if (!r) return;
  live_exit(*r);
  c3::CommProgress* prog = nullptr;
  if (g_threaded) {
    prog = t_coll_prog;
    t_coll_prog = nullptr;
    thread_left_collective();
  }
  TableGuard guard;
  if (g_pending_count < kPending) {
    g_pending_seq[g_pending_count] = seq;
    g_pending_prog[g_pending_count] = prog;
    g_pending[g_pending_count++] = req;
  }
}

WaitScope::WaitScope(const MPI_Request* reqs, int count, bool is_blocking) noexcept
    : blocking(is_blocking) {
  if (!g_record || g_pending_count == 0 || !reqs) return;
  {
  TableGuard guard;
  for (int s = 0; s < g_pending_count && n < 8; ++s)
    for (int i = 0; i < count; ++i)
      if (reqs[i] == g_pending[s]) {
        slots[n] = s;
        idx[n] = i;
        handle[n] = g_pending[s];
        seq[n] = g_pending_seq[s];
        ++n;
        break;
      }
  }
  if (n == 0 || !blocking) return;
  c3::RankRecord* r = g_record;
  t0 = now_ns();
  g_outside_ns += t0 - g_last_exit_ns;
  g_entry_ns = t0;
  rec_begin(*r);
  c3::rec_store(r->live.in_collective, std::uint64_t{1});
  c3::rec_store(r->live.entry_ns, t0);
  c3::rec_store(r->live.outside_ns, g_outside_ns);
  rec_end(*r);
}

void WaitScope::done(const MPI_Request* after) noexcept {
  c3::RankRecord* r = g_record;
  if (n == 0 || !r) return;
  bool any_done = false;
  const std::uint64_t t = now_ns();
  TableGuard guard;
  // Retire the completed ones, each found again by its request and sequence
  // number (another thread may have retired others and moved it since).
  for (int k = 0; k < n; ++k) {
    if (after[idx[k]] != MPI_REQUEST_NULL) continue;
    any_done = true;
    int s = slots[k] < g_pending_count && g_pending[slots[k]] == handle[k] && g_pending_seq[slots[k]] == seq[k]
                ? slots[k]
                : -1;
    for (int j = 0; s < 0 && j < g_pending_count; ++j)
      if (g_pending[j] == handle[k] && g_pending_seq[j] == seq[k]) s = j;
    if (s < 0) continue;  // retired already
    c3::ring_exit(*r, g_pending_seq[s], t);
    progress_completed(g_pending_prog[s], t);
    --g_pending_count;
    g_pending[s] = g_pending[g_pending_count];
    g_pending_seq[s] = g_pending_seq[g_pending_count];
    g_pending_prog[s] = g_pending_prog[g_pending_count];
  }
  if (blocking) {
    g_entry_ns = t0;
    live_exit(*r);
  } else if (any_done) {
    g_entry_ns = t;
    live_exit(*r);
  }
}

std::uint64_t type_bytes(MPI_Datatype dt, int count) noexcept {
  static MPI_Datatype last = MPI_DATATYPE_NULL;
  static int last_size = 0;
  if (count <= 0) return 0;
  if (dt != last) {
    int size = 0;
    if (PMPI_Type_size(dt, &size) != MPI_SUCCESS) size = 0;
    last = dt;
    last_size = size;
  }
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(last_size);
}

}  // namespace scout::probe
