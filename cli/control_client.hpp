// The client side of the scoutd control protocol (wire/control_protocol.hpp)
// for scoutctl: one connection per scoutd, its own read buffer (bytes left
// over from one scoutd's reply are never read as another's), a bound on the
// reply size and a receive timeout. Throws std::runtime_error with the reason.
#pragma once

#include <string>
#include <vector>

namespace scout::cli {

class ControlConnection {
 public:
  static constexpr std::size_t kMaxReplyBytes = std::size_t{64} << 20;
  // Connects, checks who answers, and greets (HELLO). The peer
  // (SO_PEERCRED) must be root, the caller, or `job_uid`: the job's user as
  // Slurm says (scoutctl_live.cpp asks squeue when the caller is root),
  // never a directory's owner; and the socket file must be the peer's own.
  // Anything else at that path is refused before a byte is read. timeout_s
  // bounds each request as a whole, not each read.
  explicit ControlConnection(const std::string& socket_path, int timeout_s = 5, long job_uid = -1);
  ~ControlConnection();
  ControlConnection(const ControlConnection&) = delete;
  ControlConnection& operator=(const ControlConnection&) = delete;
  // One request: the lines before OK; throws "ERROR: ..." as the server said it.
  std::vector<std::string> request(const std::string& line);
  // Says QUIT; errors are ignored (the reply is already in hand).
  void quit() noexcept;

 private:
  int fd_ = -1;
  int timeout_s_ = 5;
  std::string pending_;
};

}  // namespace scout::cli
