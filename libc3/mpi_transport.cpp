// libc3 MPI transport and wall clock for consensus rounds (round_transport.hpp).
#include "libc3/mpi_transport.hpp"

#include <algorithm>
#include <thread>

namespace scout::c3 {

Clock::time_point WallClock::now() { return Clock::now(); }
void WallClock::sleep_for(Clock::duration d) { std::this_thread::sleep_for(d); }

MpiTransport::MpiTransport(MPI_Comm parent) {
  MPI_Comm_dup(parent, &comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &me_);
  MPI_Comm_size(comm_, &size_);
}

MpiTransport::~MpiTransport() {
  // Requests to dead peers may never complete: cancel what is left, never wait.
  for (auto& s : sends_) {
    int done = 0;
    MPI_Test(&s.req, &done, MPI_STATUS_IGNORE);
    if (!done) {
      MPI_Request_free(&s.req);
      new Bytes(std::move(s.buf));  // MPI may still read it: never freed
    }
  }
  sends_.clear();
  // Freeing the communicator is collective in spirit; with dead members we
  // leave it to MPI_Finalize.
}

bool MpiTransport::send(int dest, int tag, Bytes bytes) {
  PendingSend ps;
  ps.buf = std::move(bytes);
  if (MPI_Isend(ps.buf.data(), static_cast<int>(ps.buf.size()), MPI_BYTE, dest, tag, comm_, &ps.req) != MPI_SUCCESS)
    return false;  // the peer is gone; its silence will be noticed by deadline
  sends_.push_back(std::move(ps));
  return true;
}

void MpiTransport::progress() {
  while (!sends_.empty()) {
    int done = 0;
    if (MPI_Test(&sends_.front().req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) done = 1;
    if (!done) break;
    sends_.pop_front();
  }
  // A send that never completes (dead peer) must not pin memory forever.
  while (sends_.size() > 256) {
    MPI_Request_free(&sends_.front().req);
    // MPI may still read the buffer: leak it deliberately (bounded by the
    // number of members that can die).
    new Bytes(std::move(sends_.front().buf));
    sends_.pop_front();
  }
}

std::optional<Received> MpiTransport::receive() {
  int flag = 0;
  MPI_Message m;
  MPI_Status st;
  if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, &m, &st) != MPI_SUCCESS || !flag) return std::nullopt;
  int len = 0;
  MPI_Get_count(&st, MPI_BYTE, &len);
  Received r;
  r.bytes.resize(static_cast<std::size_t>(std::max(len, 0)));
  if (MPI_Mrecv(r.bytes.data(), len, MPI_BYTE, &m, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
    r.source = -1;  // received nothing usable: an empty message the round drops
    r.bytes.clear();
    return r;
  }
  r.source = st.MPI_SOURCE;
  r.tag = st.MPI_TAG;
  return r;
}

}  // namespace scout::c3
