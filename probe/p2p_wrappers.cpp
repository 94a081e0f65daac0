// PMPI wrappers of the MPI-3 point-to-point family exported by
// libscout_probe.so: blocking sends and receives in every mode,
// Sendrecv(_replace), the probes, nonblocking and persistent requests, and
// MPI_Abort. Each calls the PMPI entry point and, when the probe is enabled,
// publishes what the rank waits for and counts the messages (p2p_state.cpp).
// The Wait/Test families are in mpi_wrappers.cpp (they complete both kinds).
#include <mpi.h>

#include "probe/fault_injection.hpp"
#include "probe/probe_state.hpp"

using namespace scout::probe;

#define SCOUT_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
inline MPI_Status* status_or(MPI_Status* st, MPI_Status* local) noexcept {
  return st == MPI_STATUS_IGNORE ? local : st;
}
}  // namespace

// Blocking sends: a rendezvous send waits for its receiver.
#define BLOCKING_SEND(NAME, CALL)                                                                      \
  SCOUT_EXPORT int MPI_##NAME(const void* buf, int count, MPI_Datatype dt, int dest, int tag,          \
                              MPI_Comm comm) {                                                         \
    if (!g_record) return PMPI_##NAME(buf, count, dt, dest, tag, comm);                               \
    if (__builtin_expect(faults::g_p2p_delay_active, false)) faults::p2p_delay();                     \
    P2PBlock b(CALL, comm, tag, dest);                                                                 \
    const int rc = PMPI_##NAME(buf, count, dt, dest, tag, comm);                                      \
    b.end(rc == MPI_SUCCESS ? dest : -1, type_bytes(dt, count), -1, 0);                               \
    return rc;                                                                                         \
  }
BLOCKING_SEND(Send, SCOUT_P2P_SEND)
BLOCKING_SEND(Ssend, SCOUT_P2P_SSEND)
BLOCKING_SEND(Bsend, SCOUT_P2P_BSEND)
BLOCKING_SEND(Rsend, SCOUT_P2P_RSEND)

SCOUT_EXPORT int MPI_Recv(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
                          MPI_Status* status) {
  if (!g_record) return PMPI_Recv(buf, count, dt, source, tag, comm, status);
  MPI_Status local;
  MPI_Status* st = status_or(status, &local);
  P2PBlock b(SCOUT_P2P_RECV, comm, tag, source);
  const int rc = PMPI_Recv(buf, count, dt, source, tag, comm, st);
  b.end(-1, 0, rc == MPI_SUCCESS && source != MPI_PROC_NULL ? st->MPI_SOURCE : -1, type_bytes(dt, count));
  return rc;
}

SCOUT_EXPORT int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                              void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                              MPI_Comm comm, MPI_Status* status) {
  if (!g_record)
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                         comm, status);
  MPI_Status local;
  MPI_Status* st = status_or(status, &local);
  P2PBlock b(SCOUT_P2P_SENDRECV, comm, recvtag, source, dest);
  const int rc = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                               recvtag, comm, st);
  const bool ok = rc == MPI_SUCCESS;
  b.end(ok ? dest : -1, type_bytes(sendtype, sendcount), ok && source != MPI_PROC_NULL ? st->MPI_SOURCE : -1,
        type_bytes(recvtype, recvcount));
  return rc;
}

SCOUT_EXPORT int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype dt, int dest, int sendtag, int source,
                                      int recvtag, MPI_Comm comm, MPI_Status* status) {
  if (!g_record) return PMPI_Sendrecv_replace(buf, count, dt, dest, sendtag, source, recvtag, comm, status);
  MPI_Status local;
  MPI_Status* st = status_or(status, &local);
  P2PBlock b(SCOUT_P2P_SENDRECV_REPLACE, comm, recvtag, source, dest);
  const int rc = PMPI_Sendrecv_replace(buf, count, dt, dest, sendtag, source, recvtag, comm, st);
  const bool ok = rc == MPI_SUCCESS;
  const std::uint64_t bytes = type_bytes(dt, count);
  b.end(ok ? dest : -1, bytes, ok && source != MPI_PROC_NULL ? st->MPI_SOURCE : -1, bytes);
  return rc;
}

// Probes wait for a message without receiving it: no message is counted.
SCOUT_EXPORT int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  if (!g_record) return PMPI_Probe(source, tag, comm, status);
  P2PBlock b(SCOUT_P2P_PROBE, comm, tag, source);
  const int rc = PMPI_Probe(source, tag, comm, status);
  b.end(-1, 0, -1, 0);
  return rc;
}
SCOUT_EXPORT int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  const int rc = PMPI_Iprobe(source, tag, comm, flag, status);
  if (g_record && rc == MPI_SUCCESS) {
    if (*flag) p2p_poll_clear();
    else p2p_poll(SCOUT_P2P_IPROBE, comm, tag, source);
  }
  return rc;
}
SCOUT_EXPORT int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  if (!g_record) return PMPI_Mprobe(source, tag, comm, message, status);
  P2PBlock b(SCOUT_P2P_MPROBE, comm, tag, source);
  const int rc = PMPI_Mprobe(source, tag, comm, message, status);
  p2p_mprobe_comm(comm);
  b.end(-1, 0, -1, 0);
  return rc;
}
SCOUT_EXPORT int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
                             MPI_Status* status) {
  const int rc = PMPI_Improbe(source, tag, comm, flag, message, status);
  if (g_record && rc == MPI_SUCCESS) {
    if (*flag) {
      p2p_mprobe_comm(comm);
      p2p_poll_clear();
    } else {
      p2p_poll(SCOUT_P2P_IPROBE, comm, tag, source);
    }
  }
  return rc;
}
SCOUT_EXPORT int MPI_Mrecv(void* buf, int count, MPI_Datatype dt, MPI_Message* message, MPI_Status* status) {
  if (!g_record) return PMPI_Mrecv(buf, count, dt, message, status);
  MPI_Status local;
  MPI_Status* st = status_or(status, &local);
  const bool null_message = message && *message == MPI_MESSAGE_NO_PROC;
  P2PBlock b(SCOUT_P2P_MRECV, p2p_mprobe_last(), MPI_ANY_TAG, MPI_PROC_NULL);
  const int rc = PMPI_Mrecv(buf, count, dt, message, st);
  b.end(-1, 0, rc == MPI_SUCCESS && !null_message ? st->MPI_SOURCE : -1, type_bytes(dt, count));
  return rc;
}
SCOUT_EXPORT int MPI_Imrecv(void* buf, int count, MPI_Datatype dt, MPI_Message* message, MPI_Request* request) {
  const bool null_message = message && *message == MPI_MESSAGE_NO_PROC;
  const int rc = PMPI_Imrecv(buf, count, dt, message, request);
  if (g_record && rc == MPI_SUCCESS && !null_message)
    p2p_started(*request, true, p2p_mprobe_last(), MPI_ANY_SOURCE, MPI_ANY_TAG, type_bytes(dt, count), false);
  return rc;
}

// Nonblocking and persistent requests: what each one waits for is kept
// until a Wait or Test completes it.
#define NONBLOCKING_SEND(NAME, PERSISTENT)                                                             \
  SCOUT_EXPORT int MPI_##NAME(const void* buf, int count, MPI_Datatype dt, int dest, int tag,          \
                              MPI_Comm comm, MPI_Request* request) {                                   \
    if (__builtin_expect(faults::g_p2p_delay_active, false) && !(PERSISTENT)) faults::p2p_delay();    \
    const int rc = PMPI_##NAME(buf, count, dt, dest, tag, comm, request);                             \
    if (g_record && rc == MPI_SUCCESS)                                                                 \
      p2p_started(*request, false, comm, dest, tag, type_bytes(dt, count), PERSISTENT);               \
    return rc;                                                                                         \
  }
NONBLOCKING_SEND(Isend, false)
NONBLOCKING_SEND(Issend, false)
NONBLOCKING_SEND(Ibsend, false)
NONBLOCKING_SEND(Irsend, false)
NONBLOCKING_SEND(Send_init, true)
NONBLOCKING_SEND(Ssend_init, true)
NONBLOCKING_SEND(Bsend_init, true)
NONBLOCKING_SEND(Rsend_init, true)

SCOUT_EXPORT int MPI_Irecv(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
                           MPI_Request* request) {
  const int rc = PMPI_Irecv(buf, count, dt, source, tag, comm, request);
  if (g_record && rc == MPI_SUCCESS) p2p_started(*request, true, comm, source, tag, type_bytes(dt, count), false);
  return rc;
}
SCOUT_EXPORT int MPI_Recv_init(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
                               MPI_Request* request) {
  const int rc = PMPI_Recv_init(buf, count, dt, source, tag, comm, request);
  if (g_record && rc == MPI_SUCCESS) p2p_started(*request, true, comm, source, tag, type_bytes(dt, count), true);
  return rc;
}
SCOUT_EXPORT int MPI_Start(MPI_Request* request) {
  const int rc = PMPI_Start(request);
  if (g_record && rc == MPI_SUCCESS) p2p_persistent_start(request, 1);
  return rc;
}
SCOUT_EXPORT int MPI_Startall(int count, MPI_Request requests[]) {
  const int rc = PMPI_Startall(count, requests);
  if (g_record && rc == MPI_SUCCESS) p2p_persistent_start(requests, count);
  return rc;
}
SCOUT_EXPORT int MPI_Request_free(MPI_Request* request) {
  if (g_record && request) p2p_request_free(*request);
  return PMPI_Request_free(request);
}

// MPI_Abort ends the whole job: the record says who started it, and why.
SCOUT_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode) {
  end_abort(errorcode, comm);
  return PMPI_Abort(comm, errorcode);
}
