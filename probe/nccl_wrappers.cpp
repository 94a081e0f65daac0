// The wrapped NCCL API (see nccl_probe.hpp): each call forwarded to the
// program's NCCL, counted and tracked once (the outermost call).
#include "probe/nccl_probe.hpp"

using namespace scout::nccl_probe;

// --- The wrapped API ----------------------------------------------------------
EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  NEXT(ncclCommInitRank, ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int))
  Depth d;
  ncclResult_t rc = real(comm, nranks, id, rank);
  if (rc == ncclSuccess && d.outer && comm) comm_add(*comm, id_of_unique(id), rank, nranks);
  return rc;
}
EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t* config) {
  NEXT(ncclCommInitRankConfig, ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*))
  Depth d;
  ncclResult_t rc = real(comm, nranks, id, rank, config);
  if ((rc == ncclSuccess || rc == ncclInProgress) && d.outer && comm) comm_add(*comm, id_of_unique(id), rank, nranks);
  return rc;
}
EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  NEXT(ncclCommInitAll, ncclResult_t (*)(ncclComm_t*, int, const int*))
  Depth d;
  ncclResult_t rc = real(comms, ndev, devlist);
  // Several GPUs in one process: one record cannot tell them apart; the
  // communicators are known (identity from the process and order) so their
  // operations are counted, against the first device.
  if (rc == ncclSuccess && d.outer && comms)
    for (int i = 0; i < ndev; ++i) {
      std::uint64_t w[2] = {static_cast<std::uint64_t>(getpid()), static_cast<std::uint64_t>(i)};
      comm_add(comms[i], c3::signature_words(w), i, ndev);
    }
  return rc;
}
EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  NEXT(ncclCommSplit, ncclResult_t (*)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))
  Depth d;
  ncclResult_t rc = real(comm, color, key, newcomm, config);
  if ((rc == ncclSuccess || rc == ncclInProgress) && d.outer && newcomm && *newcomm) {
    // Identity: the parent, the color and the how-many-th split of the
    // parent this is (every member splits in the same order).
    lock();
    Comm* p = comm_find(comm);
    std::uint64_t w[3] = {p ? p->id : 0, static_cast<std::uint64_t>(static_cast<std::uint32_t>(color)),
                          p ? ++p->splits : 0};
    unlock();
    int n = 0, r = 0;
    static ncclResult_t (*count)(const ncclComm_t, int*) = nullptr;
    static ncclResult_t (*user_rank)(const ncclComm_t, int*) = nullptr;
    if (next(count, "ncclCommCount")) count(*newcomm, &n);
    if (next(user_rank, "ncclCommUserRank")) user_rank(*newcomm, &r);
    comm_add(*newcomm, c3::signature_words(w), r, n);
  }
  return rc;
}
EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  NEXT(ncclCommFinalize, ncclResult_t (*)(ncclComm_t))
  return real(comm);
}
EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  NEXT(ncclCommDestroy, ncclResult_t (*)(ncclComm_t))
  comm_forget(comm);
  return real(comm);
}
EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  NEXT(ncclCommAbort, ncclResult_t (*)(ncclComm_t))
  comm_forget(comm);
  return real(comm);
}

EXPORT ncclResult_t ncclAllReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                                  cudaStream_t st) {
  NEXT(ncclAllReduce, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
  return wrap_op(kAllReduce, c, n, t, static_cast<std::uint64_t>(op) + 1, -1, st, [&] { return real(s, r, n, t, op, c, st); });
}
EXPORT ncclResult_t ncclBroadcast(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                                  cudaStream_t st) {
  NEXT(ncclBroadcast, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kBroadcast, c, n, t, 0, root, st, [&] { return real(s, r, n, t, root, c, st); });
}
EXPORT ncclResult_t ncclBcast(void* b, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st) {
  NEXT(ncclBcast, ncclResult_t (*)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kBroadcast, c, n, t, 0, root, st, [&] { return real(b, n, t, root, c, st); });
}
EXPORT ncclResult_t ncclReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root,
                               ncclComm_t c, cudaStream_t st) {
  NEXT(ncclReduce, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kReduce, c, n, t, static_cast<std::uint64_t>(op) + 1, root, st,
                 [&] { return real(s, r, n, t, op, root, c, st); });
}
EXPORT ncclResult_t ncclAllGather(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) {
  NEXT(ncclAllGather, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
  return wrap_op(kAllGather, c, n, t, 0, -1, st, [&] { return real(s, r, n, t, c, st); });
}
EXPORT ncclResult_t ncclReduceScatter(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                                      ncclComm_t c, cudaStream_t st) {
  NEXT(ncclReduceScatter, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
  return wrap_op(kReduceScatter, c, n, t, static_cast<std::uint64_t>(op) + 1, -1, st,
                 [&] { return real(s, r, n, t, op, c, st); });
}
EXPORT ncclResult_t ncclAlltoAll(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) {
  NEXT(ncclAlltoAll, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
  return wrap_op(kAllToAll, c, n, t, 0, -1, st, [&] { return real(s, r, n, t, c, st); });
}
EXPORT ncclResult_t ncclGather(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                               cudaStream_t st) {
  NEXT(ncclGather, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kGather, c, n, t, 0, root, st, [&] { return real(s, r, n, t, root, c, st); });
}
EXPORT ncclResult_t ncclScatter(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                                cudaStream_t st) {
  NEXT(ncclScatter, ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kScatter, c, n, t, 0, root, st, [&] { return real(s, r, n, t, root, c, st); });
}
EXPORT ncclResult_t ncclSend(const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
  NEXT(ncclSend, ncclResult_t (*)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kSend, c, n, t, 0, peer, st, [&] { return real(s, n, t, peer, c, st); });
}
EXPORT ncclResult_t ncclRecv(void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st) {
  NEXT(ncclRecv, ncclResult_t (*)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
  return wrap_op(kRecv, c, n, t, 0, peer, st, [&] { return real(r, n, t, peer, c, st); });
}
EXPORT ncclResult_t ncclGroupStart() {
  NEXT(ncclGroupStart, ncclResult_t (*)())
  Depth d;
  ncclResult_t rc = real();
  if (d.outer && rc == ncclSuccess) ++t_group;
  return rc;
}
EXPORT ncclResult_t ncclGroupEnd() {
  NEXT(ncclGroupEnd, ncclResult_t (*)())
  Depth d;
  ncclResult_t rc = real();
  if (d.outer && t_group > 0 && --t_group == 0) {
    // The group's operations were launched now: their end events follow.
    for (int i = 0; i < t_group_n; ++i) op_end(t_group_ops[i].slot, t_group_ops[i].stream);
    t_group_n = 0;
  }
  return rc;
}

__attribute__((destructor)) static void scout_nccl_fini() {
  c3::RankRecord* r = __atomic_exchange_n(&g_rec, nullptr, __ATOMIC_ACQ_REL);
  // The completion thread may still read the mapping: leave it mapped, mark
  // the rank finalised and remove the name.
  if (!r) return;
  c3::record_write_begin(*r);
  c3::rec_store(r->live.state, std::uint64_t{c3::kStateInitialized | c3::kStateFinalized});
  c3::record_write_end(*r);
  shm_unlink(g_shm_name);
}

