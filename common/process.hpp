// One way to start a long-lived process (scout-run's mpiruns, the SPANK
// plugin's scoutd companion): a command object and start(). The child gets
// exactly the descriptors named (everything else is closed), its own process
// group if asked, every signal at its default and unblocked, and a
// parent-death signal if asked. A failed exec is reported back to the parent
// over a close-on-exec pipe (as flux-core's libsubprocess does), so the
// caller gets "cannot run X: No such file or directory" instead of a child
// that exits 127 some time later. Safe to call from threaded programs (srun):
// everything the child needs is prepared before fork, and the child calls
// only async-signal-safe functions. Errors are reported in Started, never
// by exception (std::bad_alloc aside). A program without a "#!" line is an
// error (ENOEXEC), not handed to /bin/sh as execvp would.
//
// run_command() (spawn.hpp) is the other half: short commands whose output
// is read (scontrol, squeue).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace scout::common {

struct Command {
  // argv[0] is looked up in PATH (the caller's) unless it holds a '/'.
  std::vector<std::string> argv;
  // The child's environment; none: the caller's.
  std::optional<std::vector<std::string>> env;
  // Descriptors the child keeps, as {child's fd, caller's fd}: the caller's
  // fd becomes the child's. A child fd 0, 1 or 2 not named here is
  // /dev/null; every other descriptor is closed.
  std::vector<std::pair<int, int>> fds;
  bool new_process_group = true;  // setpgid(0, 0): signals to -pid reach the child's own tree only
  int parent_death_signal = 0;    // prctl(PR_SET_PDEATHSIG): sent when the caller's thread exits
};

struct Started {
  pid_t pid = -1;     // > 0: running (the caller reaps it)
  std::string error;  // why it did not start (the program's name, the step, the system's reason)
  bool ok() const { return pid > 0; }
};

// Starts `cmd`; returns once the child has exec'd or failed to.
Started start(const Command& cmd);

// The exit status of a reaped child, as a shell reports it: the code, or
// 128+N when killed by signal N.
int exit_code(int wait_status);

}  // namespace scout::common
