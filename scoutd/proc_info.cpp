// /proc readers (see proc_info.hpp).
#include "scoutd/proc_info.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace scout::scoutd {

ProcInfo read_proc_info(pid_t pid) {
  ProcInfo p;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!stat || !std::getline(stat, line)) {
    p.state = 'X';
    return p;
  }
  // The command name may contain spaces and parentheses: the state follows
  // the last ')'.
  auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return p;
  p.exists = true;
  p.state = line[close + 2];
  std::ifstream wchan(fmt::format("/proc/{}/wchan", pid));
  if (wchan) std::getline(wchan, p.wchan);
  if (p.wchan == "0") p.wchan.clear();
  std::ifstream io(fmt::format("/proc/{}/io", pid));
  std::string key;
  long long val;
  while (io >> key >> val) {
    if (key == "read_bytes:") p.read_bytes = val;
    if (key == "write_bytes:") p.write_bytes = val;
  }
  return p;
}

std::string describe_state(char s) {
  switch (s) {
    case 'R': return "running (R)";
    case 'S': return "sleeping (S)";
    case 'D': return "uninterruptible (D)";
    case 'T': return "stopped (T)";
    case 't': return "traced (t)";
    case 'Z': return "zombie (Z)";
    case 'X': return "gone (X)";
    case 'I': return "idle (I)";
    default: return fmt::format("unknown ({})", s);
  }
}

}  // namespace scout::scoutd
