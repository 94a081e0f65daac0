// The scoutd control protocol client (see control_client.hpp).
#include "cli/control_client.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "scoutd/wire/control_protocol.hpp"

namespace scout::cli {

ControlConnection::ControlConnection(const std::string& socket_path, int timeout_s, long job_uid)
    : timeout_s_(timeout_s) {
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof addr.sun_path)
    throw std::runtime_error(fmt::format("socket path is {} bytes; expected under {}", socket_path.size(),
                                         sizeof addr.sun_path));
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(fmt::format("socket: {}", std::strerror(errno)));
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  timeval tv{timeout_s, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(why);
  }
  ucred cred{};
  socklen_t len = sizeof cred;
  const bool known = ::getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0;
  if (!known || !(cred.uid == 0 || cred.uid == ::getuid() || (job_uid >= 0 && cred.uid == static_cast<uid_t>(job_uid)))) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(known ? fmt::format("answered by uid {}, which is neither root, you, nor the job's user{}; "
                                                 "refused (a socket planted at this path?)",
                                                 cred.uid, job_uid >= 0 ? fmt::format(" (uid {})", job_uid) : "")
                                   : std::string("cannot tell who answers (SO_PEERCRED); refused"));
  }
  // The name too: a socket file of another user's at this path, even one
  // that an allowed process answers behind, is not the job's.
  struct stat st {};
  const bool seen = ::lstat(socket_path.c_str(), &st) == 0;
  if (!seen || !S_ISSOCK(st.st_mode) || st.st_uid != cred.uid) {
    const std::string what = !seen                   ? fmt::format("gone ({})", std::strerror(errno))
                             : !S_ISSOCK(st.st_mode) ? std::string("not a socket")
                                                     : fmt::format("a socket of uid {}", st.st_uid);
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(fmt::format("answered by uid {}, but the path is {}; refused (a socket planted at this "
                                         "path?)", cred.uid, what));
  }
  request(fmt::format("HELLO {}", scoutd::kProtocolVersion));
}

ControlConnection::~ControlConnection() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<std::string> ControlConnection::request(const std::string& line) {
  const std::string req = line + "\n";
  if (::write(fd_, req.data(), req.size()) != static_cast<ssize_t>(req.size()))
    throw std::runtime_error(fmt::format("write: {}", std::strerror(errno)));
  std::vector<std::string> lines;
  std::size_t reply_bytes = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s_);
  char buf[4096];
  for (;;) {
    auto nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string l = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (l == "OK") return lines;
      if (l.rfind("ERROR:", 0) == 0) throw std::runtime_error(l);
      lines.push_back(std::move(l));
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(fmt::format("no complete reply within {} s", timeout_s_));
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) throw std::runtime_error("no reply in time");
    if (n <= 0) throw std::runtime_error("connection closed");
    reply_bytes += static_cast<std::size_t>(n);
    if (reply_bytes > kMaxReplyBytes)
      throw std::runtime_error(fmt::format("reply exceeds {} bytes; refused", kMaxReplyBytes));
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

void ControlConnection::quit() noexcept {
  try {
    request("QUIT");
  } catch (...) {
  }
}

}  // namespace scout::cli
