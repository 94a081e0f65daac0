// One way to run another program (scontrol, squeue): an argument vector, no
// shell, stdin and stderr on /dev/null, stdout captured up to a bound, and a
// deadline after which the program is killed. Safe from threaded programs
// (posix_spawn). Never throws.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace scout::common {

struct SpawnResult {
  int status = -1;          // exit status; 128+N when killed by signal N; -1 when it could not start
  bool timed_out = false;   // killed at the deadline
  std::string out;          // its standard output (at most max_out bytes)
  std::string error;        // why it failed, for a message ("" when status is 0)
  bool ok() const { return status == 0 && !timed_out; }
};

// argv[0] is looked up in PATH unless it holds a '/'.
SpawnResult run_command(const std::vector<std::string>& argv, double timeout_s,
                        std::size_t max_out = std::size_t{1} << 20);

}  // namespace scout::common
