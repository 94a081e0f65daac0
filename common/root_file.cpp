// Reading a small root-owned file safely (see root_file.hpp).
#include "common/root_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace scout::common {

std::optional<std::string> read_root_file(const std::string& path, std::size_t max_bytes, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<std::string> {
    if (why) *why = path + ": " + w;
    return std::nullopt;
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return fail(std::strerror(errno));
  struct stat st {};
  std::string out;
  std::string problem;
  if (::fstat(fd, &st) != 0) problem = std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) problem = "not a regular file";
  else if (st.st_uid != 0) problem = "not owned by root";
  else if (static_cast<std::size_t>(st.st_size) >= max_bytes)
    problem = "larger than " + std::to_string(max_bytes) + " bytes";
  else {
    std::vector<char> buf(max_bytes);
    std::size_t got = 0;
    for (;;) {
      const ssize_t n = ::read(fd, buf.data() + got, buf.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
      if (got == buf.size()) break;
    }
    out.assign(buf.data(), got);
  }
  ::close(fd);
  if (!problem.empty()) return fail(problem);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ' || out.back() == '\t')) out.pop_back();
  return out;
}

}  // namespace scout::common
