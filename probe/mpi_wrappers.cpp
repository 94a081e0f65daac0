// PMPI wrappers exported by libscout_probe.so: every MPI-3 collective
// (blocking and nonblocking), the Wait/Test families that complete the
// nonblocking ones and point-to-point requests, and the communicator
// constructors (point-to-point calls: p2p_wrappers.cpp). Each wrapper calls the
// PMPI entry point and does nothing else when the probe is disabled; the
// C ABI boundary never lets an exception through (nothing here throws).
#include <mpi.h>

#include <algorithm>

#include "probe/probe_state.hpp"

using namespace scout::probe;
using namespace scout::c3;

#define SCOUT_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
struct Scope {
  Scope(std::uint32_t kind, MPI_Comm comm, std::int64_t count, MPI_Datatype dt, MPI_Op op,
        std::int64_t root) noexcept
      : seq(coll_enter(kind, comm, count, dt, op, root)) {}
  ~Scope() { coll_exit(seq); }
  std::uint64_t seq;
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};
const MPI_Op kNoOp = MPI_OP_NULL;
const MPI_Datatype kNoType = MPI_DATATYPE_NULL;
}  // namespace

// BLOCKING(name, kind, (params), (args), count, datatype, op, root)
#define BLOCKING(NAME, KIND, PARAMS, ARGS, COUNT, DT, OP, ROOT) \
  SCOUT_EXPORT int MPI_##NAME PARAMS {                          \
    Scope s_(KIND, comm, COUNT, DT, OP, ROOT);                  \
    return PMPI_##NAME ARGS;                                    \
  }
// NONBLOCKING(name, kind, (params), (args), count, datatype, op, root)
#define NONBLOCKING(NAME, KIND, PARAMS, ARGS, COUNT, DT, OP, ROOT)           \
  SCOUT_EXPORT int MPI_##NAME PARAMS {                                       \
    const std::uint64_t seq_ = coll_enter((KIND) | kFlagNonblocking, comm, COUNT, DT, OP, ROOT); \
    int rc_ = PMPI_##NAME ARGS;                                              \
    nb_started(rc_ == MPI_SUCCESS ? *request : MPI_REQUEST_NULL, seq_);      \
    return rc_;                                                              \
  }

#define P_GATHER const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype
#define A_GATHER sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype
#define P_GATHERV const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype
#define A_GATHERV sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype
#define P_ATAV const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype
#define A_ATAV sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype
#define P_ATAW const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[]
#define A_ATAW sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes
#define P_NATAW const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[]
#define P_RED const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op
#define A_RED sendbuf, recvbuf, count, datatype, op
#define P_SCATV const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype
#define A_SCATV sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype
#define P_RS const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op
#define A_RS sendbuf, recvbuf, recvcounts, datatype, op
#define P_RSB const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op
#define A_RSB sendbuf, recvbuf, recvcount, datatype, op
#define RQ , MPI_Request *request
#define RA , request

// The count and datatype a collective records are the ones every member
// passes alike (its fingerprint compares them): the per-member amount, taken
// from the receive side where the send side may be MPI_IN_PLACE (Allgather,
// Alltoall; Gather's root) and from the send side where the receive side may
// be (Scatter's root); none for the v-variants, whose counts differ by design.
#define IN_PLACE_OR(BUF, IF_IN_PLACE, OTHERWISE) ((BUF) == MPI_IN_PLACE ? (IF_IN_PLACE) : (OTHERWISE))

// Both flavours of one collective in a single line.
#define BOTH(NAME, INAME, KIND, P, A, COUNT, DT, OP, ROOT)                                  \
  BLOCKING(NAME, KIND, (P, MPI_Comm comm), (A, comm), COUNT, DT, OP, ROOT)                  \
  NONBLOCKING(INAME, KIND, (P, MPI_Comm comm RQ), (A, comm RA), COUNT, DT, OP, ROOT)
#define BOTH_ROOT(NAME, INAME, KIND, P, A, COUNT, DT, OP)                                   \
  BLOCKING(NAME, KIND, (P, int root, MPI_Comm comm), (A, root, comm), COUNT, DT, OP, root)  \
  NONBLOCKING(INAME, KIND, (P, int root, MPI_Comm comm RQ), (A, root, comm RA), COUNT, DT, OP, root)

// Allgather, Allreduce and Bcast also sign their output (every Nth call).
SCOUT_EXPORT int MPI_Allgather(P_GATHER, MPI_Comm comm) {
  int rc;
  {
    Scope s_(kAllgather, comm, recvcount, recvtype, kNoOp, -1);
    rc = PMPI_Allgather(A_GATHER, comm);
  }
  if (rc == MPI_SUCCESS) coll_output(kAllgather, comm, recvbuf, recvcount, recvtype, true);
  return rc;
}
NONBLOCKING(Iallgather, kAllgather, (P_GATHER, MPI_Comm comm RQ), (A_GATHER, comm RA), recvcount, recvtype, kNoOp, -1)
BOTH(Allgatherv, Iallgatherv, kAllgatherv, P_GATHERV, A_GATHERV, -1, kNoType, kNoOp, -1)
SCOUT_EXPORT int MPI_Allreduce(P_RED, MPI_Comm comm) {
  int rc;
  {
    Scope s_(kAllreduce, comm, count, datatype, op, -1);
    rc = PMPI_Allreduce(A_RED, comm);
  }
  if (rc == MPI_SUCCESS) coll_output(kAllreduce, comm, recvbuf, count, datatype, false);
  return rc;
}
NONBLOCKING(Iallreduce, kAllreduce, (P_RED, MPI_Comm comm RQ), (A_RED, comm RA), count, datatype, op, -1)
BOTH(Alltoall, Ialltoall, kAlltoall, P_GATHER, A_GATHER, recvcount, recvtype, kNoOp, -1)
BOTH(Alltoallv, Ialltoallv, kAlltoallv, P_ATAV, A_ATAV, -1, sendtype, kNoOp, -1)
BOTH(Alltoallw, Ialltoallw, kAlltoallw, P_ATAW, A_ATAW, -1, kNoType, kNoOp, -1)
BOTH(Exscan, Iexscan, kExscan, P_RED, A_RED, count, datatype, op, -1)
BOTH(Scan, Iscan, kScan, P_RED, A_RED, count, datatype, op, -1)
BOTH(Reduce_scatter, Ireduce_scatter, kReduceScatter, P_RS, A_RS, -1, datatype, op, -1)
BOTH(Reduce_scatter_block, Ireduce_scatter_block, kReduceScatterBlock, P_RSB, A_RSB, recvcount, datatype, op, -1)
BOTH(Neighbor_allgather, Ineighbor_allgather, kNeighborAllgather, P_GATHER, A_GATHER, sendcount, sendtype, kNoOp, -1)
BOTH(Neighbor_allgatherv, Ineighbor_allgatherv, kNeighborAllgatherv, P_GATHERV, A_GATHERV, -1, kNoType, kNoOp, -1)
BOTH(Neighbor_alltoall, Ineighbor_alltoall, kNeighborAlltoall, P_GATHER, A_GATHER, sendcount, sendtype, kNoOp, -1)
BOTH(Neighbor_alltoallv, Ineighbor_alltoallv, kNeighborAlltoallv, P_ATAV, A_ATAV, -1, sendtype, kNoOp, -1)
BOTH(Neighbor_alltoallw, Ineighbor_alltoallw, kNeighborAlltoallw, P_NATAW, A_ATAW, -1, kNoType, kNoOp, -1)
BOTH_ROOT(Gather, Igather, kGather, P_GATHER, A_GATHER, IN_PLACE_OR(sendbuf, recvcount, sendcount),
          IN_PLACE_OR(sendbuf, recvtype, sendtype), kNoOp)
BOTH_ROOT(Gatherv, Igatherv, kGatherv, P_GATHERV, A_GATHERV, -1, kNoType, kNoOp)
BOTH_ROOT(Scatter, Iscatter, kScatter, P_GATHER, A_GATHER, IN_PLACE_OR(recvbuf, sendcount, recvcount),
          IN_PLACE_OR(recvbuf, sendtype, recvtype), kNoOp)
BOTH_ROOT(Scatterv, Iscatterv, kScatterv, P_SCATV, A_SCATV, -1, kNoType, kNoOp)
BOTH_ROOT(Reduce, Ireduce, kReduce, P_RED, A_RED, count, datatype, op)

BLOCKING(Barrier, kBarrier, (MPI_Comm comm), (comm), 0, kNoType, kNoOp, -1)
NONBLOCKING(Ibarrier, kBarrier, (MPI_Comm comm, MPI_Request *request), (comm, request), 0, kNoType, kNoOp, -1)
SCOUT_EXPORT int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  int rc;
  {
    Scope s_(kBcast, comm, count, datatype, kNoOp, root);
    rc = PMPI_Bcast(buffer, count, datatype, root, comm);
  }
  if (rc == MPI_SUCCESS) coll_output(kBcast, comm, buffer, count, datatype, false);
  return rc;
}
NONBLOCKING(Ibcast, kBcast,
            (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request),
            (buffer, count, datatype, root, comm, request), count, datatype, kNoOp, root)

// --- Wait / Test families: complete nonblocking collectives and
// point-to-point requests. A status array may be MPI_STATUSES_IGNORE.
SCOUT_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  MPI_Status local;  // an any-source receive's sender, even when the caller ignores it
  if (g_record && status == MPI_STATUS_IGNORE) status = &local;
  WaitScope w(request, 1, true);
  P2PWait p(SCOUT_P2P_WAIT, request, 1, true);
  int rc = PMPI_Wait(request, status);
  p.completed_all(status);
  w.done(request);
  return rc;
}
// An MPI_Waitall on a few point-to-point requests is waited for with
// MPI_Waitsome, so the record says which are still pending while the rank
// blocks (a halo exchange whose send never matches: the receive that
// matched is no longer waited for). After the first partial completion the
// rest is polled for 50 us before it is published (most complete by then:
// no record write). Its result is MPI_Waitall's: statuses in request order
// (the caller's MPI_ERROR fields left alone on success), an empty status
// for a null or inactive request, and on MPI_ERR_IN_STATUS MPI_SUCCESS for
// the ones completed, their own error for the ones failed, MPI_ERR_PENDING
// for the rest. Every request left unseen is waited for on its own at the
// end (the probe's table is a hint for when to stop, never trusted for it).
namespace {
constexpr int kWaitsomeMax = 16;
constexpr std::uint64_t kQuietNs = 50000;
int waitall_by_some(int count, MPI_Request reqs[], MPI_Status statuses[], P2PWait& p) {
  const bool keep = statuses != MPI_STATUSES_IGNORE;
  int idx[kWaitsomeMax];
  MPI_Status st[kWaitsomeMax];
  MPI_Status* const stp = keep ? st : MPI_STATUSES_IGNORE;
  bool seen[kWaitsomeMax] = {};
  int left = -p.inactive;  // requests to complete: the non-null ones, less the known inactive persistent ones
  for (int i = 0; i < count; ++i) left += reqs[i] != MPI_REQUEST_NULL;
  int partials = 0;
  while (left > 0) {
    int out = 0, rc = MPI_SUCCESS;
    if (partials == 1) {  // once per call: a few completing apart never spin for long
      const std::uint64_t until = now_ns() + kQuietNs;
      do rc = PMPI_Testsome(count, reqs, &out, idx, stp);
      while (rc == MPI_SUCCESS && out == 0 && now_ns() < until);
    }
    if (partials != 1 || (rc == MPI_SUCCESS && out == 0)) {
      if (partials > 0) p.publish_rest();
      rc = PMPI_Waitsome(count, reqs, &out, idx, stp);
    }
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) return rc;
    if (out == MPI_UNDEFINED) break;  // every request null or inactive now
    left -= out;  // (an inactive request the probe did not know: one more call, answered MPI_UNDEFINED)
    for (int k = 0; k < out && keep; ++k) {
      const int e = statuses[idx[k]].MPI_ERROR;
      statuses[idx[k]] = st[k];
      if (rc == MPI_SUCCESS) statuses[idx[k]].MPI_ERROR = e;
    }
    p.partly_completed(out, idx, stp);
    if (rc == MPI_ERR_IN_STATUS) {
      for (int i = 0; i < count && keep; ++i) {
        if (seen[i]) {
          statuses[i].MPI_ERROR = MPI_SUCCESS;  // completed in an earlier round
        } else if (reqs[i] == MPI_REQUEST_NULL && std::none_of(idx, idx + out, [i](int j) { return j == i; })) {
          PMPI_Waitall(1, &reqs[i], &statuses[i]);  // null from the start: empty
          statuses[i].MPI_ERROR = MPI_SUCCESS;
        } else if (std::none_of(idx, idx + out, [i](int j) { return j == i; })) {
          statuses[i].MPI_ERROR = MPI_ERR_PENDING;
        }
      }
      return rc;
    }
    for (int k = 0; k < out; ++k) seen[idx[k]] = true;
    ++partials;
  }
  for (int i = 0; i < count; ++i)  // null or inactive (an empty status), or one the table took for inactive
    if (!seen[i] && (keep || reqs[i] != MPI_REQUEST_NULL)) PMPI_Waitall(1, &reqs[i], keep ? &statuses[i] : MPI_STATUS_IGNORE);
  return MPI_SUCCESS;
}
}  // namespace

SCOUT_EXPORT int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status statuses[]) {
  WaitScope w(reqs, count, true);
  P2PWait p(SCOUT_P2P_WAITALL, reqs, count, true);
  const bool by_some = p.pending >= 2 && count <= kWaitsomeMax;
  int rc = by_some ? waitall_by_some(count, reqs, statuses, p) : PMPI_Waitall(count, reqs, statuses);
  if (by_some && rc != MPI_SUCCESS) p.abandoned();  // the rest are still in flight: not counted
  else p.completed_all(statuses);
  w.done(reqs);
  return rc;
}
SCOUT_EXPORT int MPI_Waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status) {
  WaitScope w(reqs, count, true);
  P2PWait p(SCOUT_P2P_WAITANY, reqs, count, true);
  int rc = PMPI_Waitany(count, reqs, index, status);
  p.completed_one(rc == MPI_SUCCESS ? *index : MPI_UNDEFINED, status);
  w.done(reqs);
  return rc;
}
SCOUT_EXPORT int MPI_Waitsome(int incount, MPI_Request reqs[], int *outcount, int indices[],
                              MPI_Status statuses[]) {
  WaitScope w(reqs, incount, true);
  P2PWait p(SCOUT_P2P_WAITSOME, reqs, incount, true);
  int rc = PMPI_Waitsome(incount, reqs, outcount, indices, statuses);
  p.completed_some(rc == MPI_SUCCESS ? *outcount : 0, indices, statuses);
  w.done(reqs);
  return rc;
}
SCOUT_EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  MPI_Status local;
  if (g_record && status == MPI_STATUS_IGNORE) status = &local;
  WaitScope w(request, 1, false);
  P2PWait p(SCOUT_P2P_TEST, request, 1, false);
  int rc = PMPI_Test(request, flag, status);
  if (rc == MPI_SUCCESS && *flag) p.completed_all(status); else p.none_completed();
  w.done(request);
  return rc;
}
SCOUT_EXPORT int MPI_Testall(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
  WaitScope w(reqs, count, false);
  P2PWait p(SCOUT_P2P_TESTALL, reqs, count, false);
  int rc = PMPI_Testall(count, reqs, flag, statuses);
  if (rc == MPI_SUCCESS && *flag) p.completed_all(statuses); else p.none_completed();
  w.done(reqs);
  return rc;
}
SCOUT_EXPORT int MPI_Testany(int count, MPI_Request reqs[], int *index, int *flag,
                             MPI_Status *status) {
  WaitScope w(reqs, count, false);
  P2PWait p(SCOUT_P2P_TESTANY, reqs, count, false);
  int rc = PMPI_Testany(count, reqs, index, flag, status);
  if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED) p.completed_one(*index, status); else p.none_completed();
  w.done(reqs);
  return rc;
}
SCOUT_EXPORT int MPI_Testsome(int incount, MPI_Request reqs[], int *outcount, int indices[],
                              MPI_Status statuses[]) {
  WaitScope w(reqs, incount, false);
  P2PWait p(SCOUT_P2P_TESTSOME, reqs, incount, false);
  int rc = PMPI_Testsome(incount, reqs, outcount, indices, statuses);
  if (rc == MPI_SUCCESS && *outcount > 0 && *outcount != MPI_UNDEFINED) p.completed_some(*outcount, indices, statuses);
  else p.none_completed();
  w.done(reqs);
  return rc;
}

// --- Communicator constructors: identity from world-rank membership -------
#define CONSTRUCTOR(NAME, PARAMS, ARGS, OUT)                 \
  SCOUT_EXPORT int MPI_##NAME PARAMS {                       \
    int rc_ = PMPI_##NAME ARGS;                              \
    if (rc_ == MPI_SUCCESS && g_record) comm_register(*OUT); \
    return rc_;                                              \
  }
CONSTRUCTOR(Comm_dup, (MPI_Comm comm, MPI_Comm *newcomm), (comm, newcomm), newcomm)
CONSTRUCTOR(Comm_dup_with_info, (MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm),
            (comm, info, newcomm), newcomm)
CONSTRUCTOR(Comm_split, (MPI_Comm comm, int color, int key, MPI_Comm *newcomm),
            (comm, color, key, newcomm), newcomm)
CONSTRUCTOR(Comm_split_type, (MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm),
            (comm, split_type, key, info, newcomm), newcomm)
CONSTRUCTOR(Comm_create, (MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm),
            (comm, group, newcomm), newcomm)
CONSTRUCTOR(Comm_create_group, (MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm),
            (comm, group, tag, newcomm), newcomm)
CONSTRUCTOR(Cart_create, (MPI_Comm old_comm, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm *comm_cart),
            (old_comm, ndims, dims, periods, reorder, comm_cart), comm_cart)
CONSTRUCTOR(Cart_sub, (MPI_Comm comm, const int remain_dims[], MPI_Comm *new_comm),
            (comm, remain_dims, new_comm), new_comm)
CONSTRUCTOR(Graph_create, (MPI_Comm comm_old, int nnodes, const int index[], const int edges[], int reorder, MPI_Comm *comm_graph),
            (comm_old, nnodes, index, edges, reorder, comm_graph), comm_graph)
CONSTRUCTOR(Dist_graph_create, (MPI_Comm comm_old, int n, const int nodes[], const int degrees[], const int targets[], const int weights[], MPI_Info info, int reorder, MPI_Comm *newcomm),
            (comm_old, n, nodes, degrees, targets, weights, info, reorder, newcomm), newcomm)
CONSTRUCTOR(Dist_graph_create_adjacent, (MPI_Comm comm_old, int indegree, const int sources[], const int sourceweights[], int outdegree, const int destinations[], const int destweights[], MPI_Info info, int reorder, MPI_Comm *comm_dist_graph),
            (comm_old, indegree, sources, sourceweights, outdegree, destinations, destweights, info, reorder, comm_dist_graph), comm_dist_graph)
CONSTRUCTOR(Intercomm_create, (MPI_Comm local_comm, int local_leader, MPI_Comm bridge_comm, int remote_leader, int tag, MPI_Comm *newintercomm),
            (local_comm, local_leader, bridge_comm, remote_leader, tag, newintercomm), newintercomm)
CONSTRUCTOR(Intercomm_merge, (MPI_Comm intercomm, int high, MPI_Comm *newintracomm),
            (intercomm, high, newintracomm), newintracomm)

// MPI_ERRORS_ARE_FATAL put back by the program: the probe's stand-in, which
// behaves the same and records the error (see install_mpi_error_handler).
SCOUT_EXPORT int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  if (errhandler == MPI_ERRORS_ARE_FATAL && g_record) {
    const MPI_Errhandler s = fatal_stand_in();
    if (s != MPI_ERRHANDLER_NULL) errhandler = s;
  }
  return PMPI_Comm_set_errhandler(comm, errhandler);
}

SCOUT_EXPORT int MPI_Comm_free(MPI_Comm *comm) {
  if (g_record && comm) comm_forget(*comm);
  return PMPI_Comm_free(comm);
}

// --- Life cycle ----------------------------------------------------------
// The thread level the library gave, asked of it: MPI_Init too may give
// MPI_THREAD_MULTIPLE (Open MPI's OMPI_MPI_THREAD_LEVEL=3, MPICH's
// MPIR_CVAR_DEFAULT_THREAD_LEVEL), and then the record is the threaded one
// (another thread may post requests while one waits).
static void note_thread_level() noexcept {
  int level = MPI_THREAD_SINGLE;
  if (PMPI_Query_thread(&level) == MPI_SUCCESS && level == MPI_THREAD_MULTIPLE) g_threaded = true;
}
SCOUT_EXPORT int MPI_Init(int *argc, char ***argv) {
  int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) {
    note_thread_level();
    probe_init();
  }
  return rc;
}
SCOUT_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS && provided && *provided == MPI_THREAD_MULTIPLE) g_threaded = true;
  if (rc == MPI_SUCCESS) {
    note_thread_level();
    probe_init();
  }
  return rc;
}
SCOUT_EXPORT int MPI_Finalize(void) {
  probe_finalize();
  return PMPI_Finalize();
}
