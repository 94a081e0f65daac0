// What /proc says about a rank's process: its state letter (R, S, D, T, Z...),
// the kernel function it waits in, and its I/O counters. Read by scoutd only
// when evidence is gathered, never on the training process's side.
#pragma once

#include <string>
#include <sys/types.h>

namespace scout::scoutd {

struct ProcInfo {
  bool exists = false;
  char state = '?';        // from /proc/<pid>/stat; 'X' when gone
  std::string wchan;       // /proc/<pid>/wchan (may be empty)
  long long read_bytes = -1, write_bytes = -1;  // /proc/<pid>/io (if readable)
};

ProcInfo read_proc_info(pid_t pid);
// Human text for a state letter: "stopped (T)" etc.
std::string describe_state(char state);

}  // namespace scout::scoutd
