// What /proc says about a process: its state letter (R, S, D, T, Z...), the
// kernel function it waits in, its I/O counters and its scheduler counters. The one /proc reader:
// scoutd reads its ranks with it when evidence is gathered (never on the
// training process's side), root's node check the node's D-state processes.
#pragma once

#include <string>
#include <sys/types.h>

namespace scout::common {

struct ProcInfo {
  bool exists = false;
  char state = '?';        // from /proc/<pid>/stat; 'X' when gone
  std::string wchan;       // /proc/<pid>/wchan (may be empty)
  long long read_bytes = -1, write_bytes = -1;  // /proc/<pid>/io (if readable)
  long long rchar = -1, wchar = -1;              // bytes through read/write calls
  long syscall = -1;  // /proc/<pid>/syscall: the call it blocks in (-1 running/unknown)
  // /proc/<pid>/schedstat (its main thread): nanoseconds on a CPU, and
  // waiting on a run queue (runnable but not running); -1 unreadable.
  long long cpu_ns = -1, runq_ns = -1;
  // The CPU it last ran on (/proc/<pid>/stat's field 39), and that CPU's
  // clock now (cpufreq's scaling_cur_freq, kHz); -1 unknown (no cpufreq:
  // most virtual machines).
  int processor = -1;
  long cpu_khz = -1;
};

// The process is blocked inside a read/write-family system call (read,
// write, pread, pwrite, readv, writev, fsync, fdatasync, sendfile,
// copy_file_range, splice, sync_file_range) on x86-64.
bool in_io_syscall(long nr);
const char* syscall_name(long nr);

ProcInfo read_proc_info(pid_t pid);
// The fields of /proc/<pid>/stat after the command name (which may hold
// spaces and parentheses: they follow the last ')'), starting with the
// state letter; empty when the process is gone or the line is malformed.
std::string proc_stat_fields(pid_t pid);
// The command name (between the first '(' and the last ')') and those
// fields; false when the process is gone or the line is malformed.
bool proc_stat(pid_t pid, std::string* name, std::string* fields);
// The kernel function it sleeps in ("" when running or unreadable).
std::string proc_wchan(pid_t pid);
// Human text for a state letter: "stopped (T)" etc.
std::string describe_state(char state);

}  // namespace scout::common
