// The production transport of consensus rounds: MPI point-to-point on a
// duplicated communicator (errors returned, never fatal), nonblocking sends
// kept until they complete, matched probes for receiving.
#pragma once

#include <mpi.h>

#include <deque>

#include "libc3/round_transport.hpp"

namespace scout::c3 {

class MpiTransport final : public RoundTransport {
 public:
  explicit MpiTransport(MPI_Comm parent);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return me_; }
  int size() const override { return size_; }
  bool send(int dest, int tag, Bytes bytes) override;
  std::optional<Received> receive() override;
  void progress() override;

 private:
  struct PendingSend {
    MPI_Request req;
    Bytes buf;
  };
  MPI_Comm comm_ = MPI_COMM_NULL;
  int me_ = 0, size_ = 0;
  std::deque<PendingSend> sends_;
};

}  // namespace scout::c3
