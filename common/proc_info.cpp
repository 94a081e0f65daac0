// /proc readers (see proc_info.hpp).
#include "common/proc_info.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace scout::common {

bool proc_stat(pid_t pid, std::string* name, std::string* fields) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!stat || !std::getline(stat, line)) return false;
  const auto open = line.find('(');
  const auto close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open || close + 2 >= line.size())
    return false;
  if (name) *name = line.substr(open + 1, close - open - 1);
  if (fields) *fields = line.substr(close + 2);
  return true;
}

std::string proc_stat_fields(pid_t pid) {
  std::string fields;
  return proc_stat(pid, nullptr, &fields) ? fields : std::string();
}

std::string proc_wchan(pid_t pid) {
  std::ifstream wchan(fmt::format("/proc/{}/wchan", pid));
  std::string w;
  if (wchan) std::getline(wchan, w);
  return w == "0" ? std::string() : w;
}

ProcInfo read_proc_info(pid_t pid) {
  ProcInfo p;
  const std::string fields = proc_stat_fields(pid);
  if (fields.empty()) {
    p.state = 'X';
    return p;
  }
  p.exists = true;
  p.state = fields[0];
  p.wchan = proc_wchan(pid);
  std::ifstream io(fmt::format("/proc/{}/io", pid));
  std::string key;
  long long val;
  while (io >> key >> val) {
    if (key == "read_bytes:") p.read_bytes = val;
    if (key == "write_bytes:") p.write_bytes = val;
    if (key == "rchar:") p.rchar = val;
    if (key == "wchar:") p.wchar = val;
  }
  std::ifstream sc(fmt::format("/proc/{}/syscall", pid));
  std::string first;
  if (sc >> first && !first.empty() && std::isdigit(static_cast<unsigned char>(first[0])))
    p.syscall = std::stol(first);
  {
    std::istringstream f(fields);
    std::string x;
    for (int i = 0; i <= 36 && f >> x; ++i)  // fields start at stat's third, the state; 39 is the CPU
      if (i == 36 && !x.empty() && x.size() < 8 && std::isdigit(static_cast<unsigned char>(x[0]))) p.processor = std::stoi(x);
  }
  if (p.processor >= 0) {
    std::ifstream fq(fmt::format("/sys/devices/system/cpu/cpu{}/cpufreq/scaling_cur_freq", p.processor));
    long khz = -1;
    if (fq >> khz && khz > 0 && khz < 100'000'000) p.cpu_khz = khz;
  }
  std::ifstream ss(fmt::format("/proc/{}/schedstat", pid));
  long long on_cpu = -1, on_runq = -1;
  if (ss >> on_cpu >> on_runq && on_cpu >= 0 && on_runq >= 0) {
    p.cpu_ns = on_cpu;
    p.runq_ns = on_runq;
  }
  return p;
}

bool in_io_syscall(long nr) {
#if defined(__x86_64__)
  switch (nr) {
    case 0: case 1: case 17: case 18: case 19: case 20: case 40: case 74: case 75:
    case 275: case 277: case 295: case 296: case 326:
      return true;
  }
#else
  (void)nr;
#endif
  return false;
}

const char* syscall_name(long nr) {
#if defined(__x86_64__)
  switch (nr) {
    case 0: return "read";
    case 1: return "write";
    case 17: return "pread64";
    case 18: return "pwrite64";
    case 19: return "readv";
    case 20: return "writev";
    case 40: return "sendfile";
    case 74: return "fsync";
    case 75: return "fdatasync";
    case 275: return "splice";
    case 277: return "sync_file_range";
    case 295: return "preadv";
    case 296: return "pwritev";
    case 326: return "copy_file_range";
  }
#else
  (void)nr;
#endif
  return nr < 0 ? "none" : "other";
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

}  // namespace scout::common
