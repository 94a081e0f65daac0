// Drives every MPI-3 collective (blocking and nonblocking) and the
// communicator constructors through the preloaded probe, and checks after
// each call what the rank's own shm record says: the sequence number went up
// by one, the collective kind is right, the rank is outside the collective,
// and communicator identities agree across ranks and differ between dups;
// then every point-to-point call the probe wraps, checking the messages it
// counted, that it is no longer waiting, and the per-peer counters.
#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "libc3/rank_record.hpp"

using namespace scout::c3;

namespace {
const RankRecord* g_rec = nullptr;
int g_failures = 0, g_checked = 0, g_rank = 0;
std::uint64_t g_last_seq = 0;

RecordLive read_live() {
  RecordLive l{};
  if (!record_read(*g_rec, l)) {
    std::fprintf(stderr, "probe_check: rank %d: record stayed locked\n", g_rank);
    std::exit(1);
  }
  return l;
}

void expect(const char* what, std::uint32_t kind) {
  RecordLive l = read_live();
  ++g_checked;
  if (l.seq != g_last_seq + 1 || (l.kind & 0xff) != kind || l.in_collective != 0) {
    std::fprintf(stderr, "probe_check: rank %d: after %s: seq %llu (expected %llu), kind %s "
                 "(expected %s), in_collective %llu\n", g_rank, what,
                 static_cast<unsigned long long>(l.seq), static_cast<unsigned long long>(g_last_seq + 1),
                 coll_name(static_cast<std::uint32_t>(l.kind)), coll_name(kind),
                 static_cast<unsigned long long>(l.in_collective));
    ++g_failures;
  }
  g_last_seq = l.seq;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* job = std::getenv("SCOUT_JOB_ID");
  const char* step = std::getenv("SCOUT_STEP_ID");
  std::string name = record_shm_name(job ? job : "", step ? step : "0", g_rank);
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) {
    std::fprintf(stderr, "probe_check: rank %d: no record %s: is the probe preloaded?\n", g_rank, name.c_str());
    return 1;
  }
  struct stat st {};
  fstat(fd, &st);
  if ((st.st_mode & 0777) != 0600) {
    std::fprintf(stderr, "probe_check: record mode %o, expected 600\n", st.st_mode & 0777);
    ++g_failures;
  }
  g_rec = static_cast<const RankRecord*>(mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0));
  close(fd);
  if (auto why = record_check_header(*g_rec, static_cast<std::size_t>(st.st_size)); !why.empty()) {
    std::fprintf(stderr, "probe_check: bad header: %s\n", why.c_str());
    return 1;
  }
  g_last_seq = read_live().seq;

  const int n = size;
  std::vector<int> s(static_cast<std::size_t>(n), 1), r(static_cast<std::size_t>(n), 0);
  std::vector<int> counts(static_cast<std::size_t>(n), 1), displs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) displs[static_cast<std::size_t>(i)] = i;
  std::vector<MPI_Datatype> types(static_cast<std::size_t>(n), MPI_INT);
  int x = 1, y = 0;
  MPI_Request q;
  MPI_Comm w = MPI_COMM_WORLD;

#define B(CALL, KIND) do { CALL; expect(#CALL, KIND); } while (0)
#define NB(CALL, KIND) do { CALL; MPI_Wait(&q, MPI_STATUS_IGNORE); expect(#CALL, KIND); } while (0)
  B(MPI_Barrier(w), kBarrier);
  B(MPI_Bcast(&x, 1, MPI_INT, 0, w), kBcast);
  B(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, w), kAllreduce);
  B(MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, 0, w), kReduce);
  B(MPI_Allgather(&x, 1, MPI_INT, r.data(), 1, MPI_INT, w), kAllgather);
  B(MPI_Allgatherv(&x, 1, MPI_INT, r.data(), counts.data(), displs.data(), MPI_INT, w), kAllgatherv);
  B(MPI_Gather(&x, 1, MPI_INT, r.data(), 1, MPI_INT, 0, w), kGather);
  B(MPI_Gatherv(&x, 1, MPI_INT, r.data(), counts.data(), displs.data(), MPI_INT, 0, w), kGatherv);
  B(MPI_Scatter(s.data(), 1, MPI_INT, &y, 1, MPI_INT, 0, w), kScatter);
  B(MPI_Scatterv(s.data(), counts.data(), displs.data(), MPI_INT, &y, 1, MPI_INT, 0, w), kScatterv);
  B(MPI_Alltoall(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, w), kAlltoall);
  B(MPI_Alltoallv(s.data(), counts.data(), displs.data(), MPI_INT, r.data(), counts.data(), displs.data(), MPI_INT, w), kAlltoallv);
  std::vector<int> bdispls(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) bdispls[static_cast<std::size_t>(i)] = i * static_cast<int>(sizeof(int));
  B(MPI_Alltoallw(s.data(), counts.data(), bdispls.data(), types.data(), r.data(), counts.data(), bdispls.data(), types.data(), w), kAlltoallw);
  B(MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, w), kScan);
  B(MPI_Exscan(&x, &y, 1, MPI_INT, MPI_SUM, w), kExscan);
  B(MPI_Reduce_scatter(s.data(), &y, counts.data(), MPI_INT, MPI_SUM, w), kReduceScatter);
  B(MPI_Reduce_scatter_block(s.data(), &y, 1, MPI_INT, MPI_SUM, w), kReduceScatterBlock);
  NB(MPI_Ibarrier(w, &q), kBarrier);
  NB(MPI_Ibcast(&x, 1, MPI_INT, 0, w, &q), kBcast);
  NB(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, w, &q), kAllreduce);
  NB(MPI_Ireduce(&x, &y, 1, MPI_INT, MPI_SUM, 0, w, &q), kReduce);
  NB(MPI_Iallgather(&x, 1, MPI_INT, r.data(), 1, MPI_INT, w, &q), kAllgather);
  NB(MPI_Iallgatherv(&x, 1, MPI_INT, r.data(), counts.data(), displs.data(), MPI_INT, w, &q), kAllgatherv);
  NB(MPI_Igather(&x, 1, MPI_INT, r.data(), 1, MPI_INT, 0, w, &q), kGather);
  NB(MPI_Igatherv(&x, 1, MPI_INT, r.data(), counts.data(), displs.data(), MPI_INT, 0, w, &q), kGatherv);
  NB(MPI_Iscatter(s.data(), 1, MPI_INT, &y, 1, MPI_INT, 0, w, &q), kScatter);
  NB(MPI_Iscatterv(s.data(), counts.data(), displs.data(), MPI_INT, &y, 1, MPI_INT, 0, w, &q), kScatterv);
  NB(MPI_Ialltoall(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, w, &q), kAlltoall);
  NB(MPI_Ialltoallv(s.data(), counts.data(), displs.data(), MPI_INT, r.data(), counts.data(), displs.data(), MPI_INT, w, &q), kAlltoallv);
  NB(MPI_Ialltoallw(s.data(), counts.data(), bdispls.data(), types.data(), r.data(), counts.data(), bdispls.data(), types.data(), w, &q), kAlltoallw);
  NB(MPI_Iscan(&x, &y, 1, MPI_INT, MPI_SUM, w, &q), kScan);
  NB(MPI_Iexscan(&x, &y, 1, MPI_INT, MPI_SUM, w, &q), kExscan);
  NB(MPI_Ireduce_scatter(s.data(), &y, counts.data(), MPI_INT, MPI_SUM, w, &q), kReduceScatter);
  NB(MPI_Ireduce_scatter_block(s.data(), &y, 1, MPI_INT, MPI_SUM, w, &q), kReduceScatterBlock);
  // Completion through Test: the nonblocking one retires when Test says so.
  {
    MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, w, &q);
    int done = 0;
    while (!done) MPI_Test(&q, &done, MPI_STATUS_IGNORE);
    expect("MPI_Iallreduce + MPI_Test", kAllreduce);
  }
  // Neighborhood collectives on a ring.
  int dims[1] = {n}, periods[1] = {1};
  MPI_Comm cart;
  MPI_Cart_create(w, 1, dims, periods, 0, &cart);
  B(MPI_Neighbor_allgather(&x, 1, MPI_INT, r.data(), 1, MPI_INT, cart), kNeighborAllgather);
  B(MPI_Neighbor_alltoall(s.data(), 1, MPI_INT, r.data(), 1, MPI_INT, cart), kNeighborAlltoall);
  NB(MPI_Ineighbor_allgather(&x, 1, MPI_INT, r.data(), 1, MPI_INT, cart, &q), kNeighborAllgather);

  // Communicator identities: a dup differs from WORLD; equal on all ranks.
  MPI_Comm dup, half;
  MPI_Comm_dup(w, &dup);
  MPI_Comm_split(w, g_rank % 2, g_rank, &half);
  B(MPI_Barrier(w), kBarrier);
  std::uint64_t world_id = read_live().comm_id;
  B(MPI_Barrier(dup), kBarrier);
  std::uint64_t dup_id = read_live().comm_id;
  B(MPI_Barrier(half), kBarrier);
  std::uint64_t half_id = read_live().comm_id;
  if (world_id == dup_id || world_id == 0 || dup_id == 0 || half_id == 0 || half_id == world_id) {
    std::fprintf(stderr, "probe_check: rank %d: communicator ids world %llx dup %llx half %llx\n",
                 g_rank, (unsigned long long)world_id, (unsigned long long)dup_id, (unsigned long long)half_id);
    ++g_failures;
  }
  std::uint64_t ids[3] = {world_id, dup_id, half_id};
  std::vector<std::uint64_t> all(3 * static_cast<std::size_t>(n));
  MPI_Allgather(ids, 3, MPI_UINT64_T, all.data(), 3, MPI_UINT64_T, w);
  for (int i = 0; i < n; ++i) {
    auto* o = &all[3 * static_cast<std::size_t>(i)];
    bool same_half = (i % 2) == (g_rank % 2);
    if (o[0] != world_id || o[1] != dup_id || (same_half != (o[2] == half_id))) {
      std::fprintf(stderr, "probe_check: rank %d: ids disagree with rank %d\n", g_rank, i);
      ++g_failures;
    }
  }
  // Each communicator's membership is published once, by identity.
  {
    const std::uint64_t nc = __atomic_load_n(const_cast<std::uint64_t*>(&g_rec->comm_count), __ATOMIC_ACQUIRE);
    bool found_half = false, found_world = false;
    for (std::uint64_t i = 0; i < nc && i < kCommTable; ++i) {
      const CommEntry& ce = g_rec->comms[i];
      if (ce.id == world_id) found_world = ce.size == static_cast<std::uint32_t>(n);
      if (ce.id == half_id) {
        found_half = true;
        for (std::uint32_t k = 0; k < ce.stored; ++k)
          if (ce.members[k] % 2 != g_rank % 2) found_half = false;
        if (ce.size != static_cast<std::uint32_t>((n + 1 - g_rank % 2) / 2)) found_half = false;
      }
    }
    if (!found_half || !found_world) {
      std::fprintf(stderr, "probe_check: rank %d: published memberships wrong (world %d, half %d, %llu entries)\n",
                   g_rank, found_world, found_half, static_cast<unsigned long long>(nc));
      ++g_failures;
    }
  }
  MPI_Comm_free(&dup);
  MPI_Comm_free(&half);
  MPI_Comm_free(&cart);
  // --- point-to-point: every wrapped call, counted in the version-6 part ---
  int p2p_checked = 0;
  {
    const RecordV6* v6 = as_v6(*g_rec, g_rec->version);
    if (!v6) {
      std::fprintf(stderr, "probe_check: rank %d: record version %u has no point-to-point part\n", g_rank, g_rec->version);
      ++g_failures;
    } else if (n % 2 == 0) {
      const int right = (g_rank + 1) % n, left = (g_rank + n - 1) % n;
      auto ops = [&] {
        P2PLive l{};
        if (!p2p_read(*v6, l)) { std::fprintf(stderr, "probe_check: p2p part stayed locked\n"); std::exit(1); }
        return l;
      };
      std::uint64_t want = ops().ops;
      auto step = [&](const char* what, std::uint64_t add) {
        want += add;
        const P2PLive l = ops();
        ++p2p_checked;
        if (l.ops != want || l.call != 0 || l.npeers != 0) {
          std::fprintf(stderr, "probe_check: rank %d: after %s: messages %llu (expected %llu), call %s, %llu peers\n",
                       g_rank, what, (unsigned long long)l.ops, (unsigned long long)want, p2p_call_name(l.call),
                       (unsigned long long)l.npeers);
          ++g_failures;
        }
      };
      int x = g_rank, y = -1;
      MPI_Request rq[2];
      MPI_Sendrecv(&x, 1, MPI_INT, right, 1, &y, 1, MPI_INT, left, 1, w, MPI_STATUS_IGNORE);
      step("MPI_Sendrecv", 2);
      y = x;
      MPI_Sendrecv_replace(&y, 1, MPI_INT, right, 2, left, 2, w, MPI_STATUS_IGNORE);
      step("MPI_Sendrecv_replace", 2);
      MPI_Irecv(&y, 1, MPI_INT, left, 3, w, &rq[0]);
      MPI_Isend(&x, 1, MPI_INT, right, 3, w, &rq[1]);
      MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
      step("MPI_Isend/MPI_Irecv/MPI_Waitall", 2);
      // That wait's directions and tags (record version 10): a receive from
      // the left and a send to the right, both with tag 3, paired by entry;
      // or, when one of the two completed and the other took over 50 us
      // more, only the other (the probe publishes the requests still
      // pending: a loaded host's CI saw the receive alone).
      const RecordV9* v9 = as_v9(*g_rec, g_rec->version);
      const RecordV10* v10 = as_v10(*g_rec, g_rec->version);
      auto dirs_entry = [&] {
        P2PDirs d{};
        return v9 && dirs_read(*v9, d) ? d.entry_ns : 0;
      };
      ++p2p_checked;
      {
        P2PDirs d{};
        P2PTags t{};
        if (!v9 || !v10 || !dirs_read(*v9, d) || !tags_read(*v10, t) || d.entry_ns == 0 || t.entry_ns != d.entry_ns ||
            !(d.recv_mask | d.send_mask)) {
          std::fprintf(stderr, "probe_check: rank %d: version %u: no directions and tags of the MPI_Waitall\n", g_rank,
                       g_rec->version);
          ++g_failures;
        } else {
          for (std::size_t k = 0; k < kBlockedPeers; ++k)
            if (((d.recv_mask >> k) & 1 ? t.recv_tag[k] != 3 : t.recv_tag[k] != kTagNone) ||
                ((d.send_mask >> k) & 1 ? t.send_tag[k] != 3 : t.send_tag[k] != kTagNone)) {
              std::fprintf(stderr, "probe_check: rank %d: peer slot %zu: tags %lld/%lld, masks %#llx/%#llx\n", g_rank, k,
                           (long long)t.recv_tag[k], (long long)t.send_tag[k], (unsigned long long)d.recv_mask,
                           (unsigned long long)d.send_mask);
              ++g_failures;
            }
        }
      }
      // A started persistent receive outside a wait is in flight too: that
      // wait's directions are withheld (a peer may be sending it). Once it
      // completed and was freed, a wait's directions are published again.
      {
        MPI_Request p;
        int z = -1;
        MPI_Recv_init(&z, 1, MPI_INT, left, 20, w, &p);
        MPI_Start(&p);
        const std::uint64_t before = dirs_entry();
        MPI_Irecv(&y, 1, MPI_INT, left, 21, w, &rq[0]);
        MPI_Isend(&x, 1, MPI_INT, right, 21, w, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        ++p2p_checked;
        if (dirs_entry() != before) {
          std::fprintf(stderr, "probe_check: rank %d: directions published beside an active persistent receive\n", g_rank);
          ++g_failures;
        }
        MPI_Isend(&x, 1, MPI_INT, right, 20, w, &rq[1]);
        MPI_Wait(&p, MPI_STATUS_IGNORE);
        MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
        MPI_Request_free(&p);
        const std::uint64_t again = dirs_entry();
        MPI_Irecv(&y, 1, MPI_INT, left, 22, w, &rq[0]);
        MPI_Isend(&x, 1, MPI_INT, right, 22, w, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        ++p2p_checked;
        if (dirs_entry() == again) {
          std::fprintf(stderr, "probe_check: rank %d: no directions after the persistent receive completed\n", g_rank);
          ++g_failures;
        }
        step("a wait beside an active persistent receive", 6);
      }
      MPI_Irecv(&y, 1, MPI_INT, MPI_ANY_SOURCE, 4, w, &rq[0]);
      MPI_Issend(&x, 1, MPI_INT, right, 4, w, &rq[1]);
      MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
      MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
      step("MPI_Issend/any-source MPI_Irecv/MPI_Wait", 2);
      MPI_Send_init(&x, 1, MPI_INT, right, 5, w, &rq[1]);
      MPI_Recv_init(&y, 1, MPI_INT, left, 5, w, &rq[0]);
      for (int k = 0; k < 2; ++k) {
        MPI_Startall(2, rq);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
      }
      MPI_Request_free(&rq[0]);
      MPI_Request_free(&rq[1]);
      step("persistent requests, MPI_Startall twice", 4);
      if (g_rank % 2 == 0) {
        MPI_Send(&x, 1, MPI_INT, right, 6, w);
        MPI_Recv(&y, 1, MPI_INT, left, 6, w, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(&y, 1, MPI_INT, left, 6, w, MPI_STATUS_IGNORE);
        MPI_Ssend(&x, 1, MPI_INT, right, 6, w);
      }
      step("MPI_Send/MPI_Ssend/MPI_Recv", 2);
      std::vector<char> buf(1024 + MPI_BSEND_OVERHEAD);
      MPI_Buffer_attach(buf.data(), static_cast<int>(buf.size()));
      MPI_Bsend(&x, 1, MPI_INT, right, 7, w);
      MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, w, MPI_STATUS_IGNORE);
      void* old_buf = nullptr;
      int old_size = 0;
      MPI_Buffer_detach(&old_buf, &old_size);
      step("MPI_Bsend/any-source MPI_Recv", 2);
      MPI_Irecv(&y, 1, MPI_INT, left, 8, w, &rq[0]);
      PMPI_Barrier(w);  // every receive posted before the ready send
      MPI_Rsend(&x, 1, MPI_INT, right, 8, w);
      MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
      step("MPI_Rsend", 2);
      MPI_Isend(&x, 1, MPI_INT, right, 9, w, &rq[1]);
      MPI_Message msg;
      MPI_Mprobe(left, 9, w, &msg, MPI_STATUS_IGNORE);
      MPI_Mrecv(&y, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
      MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
      step("MPI_Mprobe/MPI_Mrecv", 2);
      MPI_Isend(&x, 1, MPI_INT, right, 10, w, &rq[1]);
      for (int flag = 0; !flag;) MPI_Iprobe(left, 10, w, &flag, MPI_STATUS_IGNORE);
      MPI_Recv(&y, 1, MPI_INT, left, 10, w, MPI_STATUS_IGNORE);
      MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
      step("MPI_Iprobe loop", 2);
      MPI_Irecv(&y, 1, MPI_INT, left, 11, w, &rq[0]);
      MPI_Isend(&x, 1, MPI_INT, right, 11, w, &rq[1]);
      for (int flag = 0; !flag;) MPI_Testall(2, rq, &flag, MPI_STATUSES_IGNORE);
      step("MPI_Testall loop", 2);
      MPI_Irecv(&y, 1, MPI_INT, left, 12, w, &rq[0]);
      MPI_Isend(&x, 1, MPI_INT, right, 12, w, &rq[1]);
      for (int k = 0, idx = 0; k < 2; ++k) MPI_Waitany(2, rq, &idx, MPI_STATUS_IGNORE);
      step("MPI_Waitany", 2);
      MPI_Irecv(&y, 1, MPI_INT, left, 13, w, &rq[0]);
      MPI_Isend(&x, 1, MPI_INT, right, 13, w, &rq[1]);
      for (int done = 0; done < 2;) {
        int out = 0, idx[2];
        MPI_Waitsome(2, rq, &out, idx, MPI_STATUSES_IGNORE);
        if (out != MPI_UNDEFINED) done += out;
      }
      step("MPI_Waitsome", 2);
      MPI_Recv(&y, 1, MPI_INT, MPI_PROC_NULL, 14, w, MPI_STATUS_IGNORE);
      step("MPI_Recv from MPI_PROC_NULL", 0);
      // Per-peer counters: 17 messages to the right and 17 from the left (the
      // any-source receives came from the left too).
      std::uint64_t sent_right = 0, recvd_left = 0;
      for (std::size_t k = 0; k < kPeerSlots; ++k) {
        const PeerSlot& ps = v6->peers[k];
        if (ps.peer == static_cast<std::uint64_t>(right) + 1) sent_right = ps.sent;
        if (ps.peer == static_cast<std::uint64_t>(left) + 1) recvd_left = ps.recvd;
      }
      ++p2p_checked;
      if (sent_right != 17 || recvd_left != 17) {
        std::fprintf(stderr, "probe_check: rank %d: %llu sent to %d (expected 17), %llu received from %d (expected 17)\n",
                     g_rank, (unsigned long long)sent_right, right, (unsigned long long)recvd_left, left);
        ++g_failures;
      }
    }
  }
  g_last_seq = read_live().seq;
  int total = 0;
  MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, w);
  if (g_rank == 0)
    std::printf("probe_check: %d collectives checked per rank, %d point-to-point checks, %d failures\n", g_checked,
                p2p_checked, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
