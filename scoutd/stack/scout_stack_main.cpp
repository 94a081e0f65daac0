// scout-stack: the user-space stack of a process's threads, for scoutd's
// hang evidence (and for a person, like eu-stack). It stops the thread(s)
// with PTRACE_SEIZE + PTRACE_INTERRUPT (no signal: a process stopped with
// SIGSTOP is never resumed, not even for a moment), unwinds them through
// elfutils' libdwfl from the CFI of their ELF files, symbolises each frame
// from the ELF symbol tables, adds its call site (source file and line)
// where the module has DWARF line tables, detaches (each thread continues,
// or stays stopped, as it was) and prints one JSON object per line:
//
//   {"pid":N,"tid":T,"frames":["nanosleep","compute (train.c:62)","main (train.c:90)",...]}
//                                                                   innermost first
//   {"pid":N,"error":"..."}                                          not traced, and why
//
// scoutd runs it with a deadline (common::run_command) and as the ranks'
// own user: it never needs privileges of its own. Exit status 0 when every
// process was traced, 1 when one was not, 2 on bad usage.
#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <dirent.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

constexpr int kMaxFrames = 64;
// A frame's characters, as scoutd keeps them (rank_evidence.hpp's
// kMaxFrameChars): a long name is shortened before its call site is.
constexpr std::size_t kFrameChars = 160;

// " (file:line)" of the instruction at `at`, from the module's DWARF line
// table; "" without one (no debug information, a stripped library).
std::string site_of(Dwfl_Module* m, Dwarf_Addr at) {
  if (!m) return {};
  Dwfl_Line* line = dwfl_module_getsrc(m, at);
  if (!line) return {};
  int lineno = 0;
  const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
  if (!file || !*file || lineno <= 0) return {};
  const char* base = std::strrchr(file, '/');
  std::string f = base ? base + 1 : file;
  if (f.size() > 64) {
    std::size_t from = f.size() - 64;
    while (from < f.size() && (static_cast<unsigned char>(f[from]) & 0xC0) == 0x80) ++from;  // a whole character
    f = f.substr(from);
  }
  return " (" + f + ":" + std::to_string(lineno) + ")";
}

// The function's name and its call site within kFrameChars.
std::string with_site(std::string name, const std::string& site) {
  if (name.size() + site.size() > kFrameChars) {
    std::size_t n = kFrameChars - site.size() - 3;  // the site is at most 64 + 24 characters
    while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0) == 0x80) --n;
    name = name.substr(0, n) + "...";
  }
  return name + site;
}

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  // The function, without its parameter list: classes of stacks compare names.
  int depth = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '<') ++depth;
    if (out[i] == '>') --depth;
    if (out[i] == '(' && depth == 0 && i > 0) return out.substr(0, i);
  }
  return out;
}

struct Walk {
  Dwfl* dwfl = nullptr;
  std::vector<std::string> frames;
};

int on_frame(Dwfl_Frame* frame, void* arg) {
  auto* w = static_cast<Walk*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
  // A return address points after the call: look up the call itself.
  const Dwarf_Addr at = activation ? pc : pc - 1;
  Dwfl_Module* m = dwfl_addrmodule(w->dwfl, at);
  const char* name = m ? dwfl_module_addrname(m, at) : nullptr;
  if (name) {
    std::string n = name;
    if (auto at_sign = n.find('@'); at_sign != std::string::npos && at_sign > 0) n.resize(at_sign);  // memcpy@GLIBC_2.14
    // The call site of each caller (a return address): not of the innermost
    // frame, whose line is wherever the thread happens to be (ranks spinning
    // in one loop would be as many classes as lines).
    w->frames.push_back(with_site(demangle(n.c_str()), activation ? std::string() : site_of(m, at)));
  } else {
    // No symbol: the module and the offset in it, which are the same in
    // every process of a program whatever its load address (ASLR).
    Dwarf_Addr start = 0;
    const char* mod = m ? dwfl_module_info(m, nullptr, &start, nullptr, nullptr, nullptr, nullptr, nullptr) : nullptr;
    char buf[64];
    std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(at - start));
    std::string s = "??";
    if (mod) {
      const char* base = std::strrchr(mod, '/');
      s = std::string(base ? base + 1 : mod) + buf;
    }
    w->frames.push_back(s);
  }
  return static_cast<int>(w->frames.size()) >= kMaxFrames ? DWARF_CB_ABORT : DWARF_CB_OK;
}

std::string dwfl_error() {
  const char* e = dwfl_errmsg(-1);
  return e ? e : "unknown error";
}

struct Seized {
  pid_t tid;
  int signal;  // a signal it was about to take when it stopped: delivered on detach
};

std::vector<pid_t> threads_of(pid_t pid) {
  std::vector<pid_t> out{pid};
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const long t = std::strtol(e->d_name, nullptr, 10);
      if (t > 0 && t != pid) out.push_back(static_cast<pid_t>(t));
    }
    closedir(d);
  }
  return out;
}

bool seize(Seized& s, std::string* why) {
  if (ptrace(PTRACE_SEIZE, s.tid, nullptr, nullptr) != 0) {
    *why = std::strerror(errno);
    return false;
  }
  if (ptrace(PTRACE_INTERRUPT, s.tid, nullptr, nullptr) != 0) {
    *why = std::strerror(errno);
    ptrace(PTRACE_DETACH, s.tid, nullptr, nullptr);
    return false;
  }
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(s.tid, &status, __WALL);
    if (r == s.tid && WIFSTOPPED(status)) break;
    if (r < 0 && errno == EINTR) continue;
    *why = r < 0 ? std::strerror(errno) : "it exited";
    return false;
  }
  // A signal-delivery stop (not our interrupt's event stop, nor a group
  // stop): the signal is handed back when we detach.
  if ((status >> 16) == 0 && WSTOPSIG(status) != SIGTRAP) s.signal = WSTOPSIG(status);
  return true;
}

void release(const std::vector<Seized>& seized) {
  for (auto& s : seized)
    ptrace(PTRACE_DETACH, s.tid, nullptr, reinterpret_cast<void*>(static_cast<long>(s.signal)));
}

// The stack of `pid`'s main thread (all threads with `all`); false and a
// JSON error line when it cannot be taken.
bool trace(pid_t pid, bool all) {
  static const Dwfl_Callbacks callbacks = {
      dwfl_linux_proc_find_elf, dwfl_standard_find_debuginfo, nullptr, nullptr};
  Dwfl* dwfl = dwfl_begin(&callbacks);
  if (!dwfl) {
    std::puts(json{{"pid", pid}, {"error", "libdwfl: " + dwfl_error()}}.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    return false;
  }
  bool ok = true;
  int rc = dwfl_linux_proc_report(dwfl, pid);
  if (rc != 0 || dwfl_report_end(dwfl, nullptr, nullptr) != 0) {
    std::string why = rc > 0 ? std::strerror(rc) : dwfl_error();
    if (rc == ENOENT) why = "no such process";
    std::puts(json{{"pid", pid}, {"error", "cannot read its memory map: " + why}}.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    dwfl_end(dwfl);
    return false;
  }
  // Stop the threads ourselves with PTRACE_SEIZE + PTRACE_INTERRUPT: unlike
  // PTRACE_ATTACH it needs no SIGSTOP, so a rank that was stopped (SIGSTOP)
  // is never resumed, not even for a moment, and a running one sees no
  // signal. They are detached below, each as it was.
  std::vector<Seized> seized;
  std::string why;
  for (pid_t tid : all ? threads_of(pid) : std::vector<pid_t>{pid}) {
    Seized s{tid, 0};
    if (!seize(s, &why)) {
      if (tid == pid) break;
      continue;  // a thread that ended meanwhile
    }
    seized.push_back(s);
  }
  if (seized.empty() || seized.front().tid != pid) {
    release(seized);
    if (why.find("Operation not permitted") != std::string::npos)
      why += " (ptrace: another user's process, or kernel.yama.ptrace_scope)";
    std::puts(json{{"pid", pid}, {"error", "cannot attach: " + why}}.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    dwfl_end(dwfl);
    return false;
  }
  rc = dwfl_linux_proc_attach(dwfl, pid, true);
  if (rc != 0) {
    std::string w = rc > 0 ? std::strerror(rc) : dwfl_error();
    std::puts(json{{"pid", pid}, {"error", "cannot attach: " + w}}.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    dwfl_end(dwfl);
    release(seized);
    return false;
  }
  auto one = [&](pid_t tid) {
    Walk w{dwfl, {}};
    const int r = dwfl_getthread_frames(dwfl, tid, on_frame, &w);
    if (w.frames.empty() && r != 0) {
      std::puts(json{{"pid", pid}, {"tid", tid}, {"error", "cannot unwind: " + dwfl_error()}}.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
      ok = false;
      return;
    }
    std::puts(json{{"pid", pid}, {"tid", tid}, {"frames", w.frames}}.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  };
  if (all) {
    struct Ctx {
      decltype(one)* f;
    } ctx{&one};
    dwfl_getthreads(
        dwfl,
        [](Dwfl_Thread* t, void* arg) -> int {
          (*static_cast<Ctx*>(arg)->f)(dwfl_thread_tid(t));
          return DWARF_CB_OK;
        },
        &ctx);
  } else {
    one(pid);
  }
  dwfl_end(dwfl);
  release(seized);  // every thread continues, or stays stopped, as it was
  return ok;
}

void usage(FILE* f) {
  std::fputs(
      "usage: scout-stack [--all-threads] PID...\n"
      "Prints the user-space stack of each process's main thread (every thread with\n"
      "--all-threads) as JSON lines: {\"pid\",\"tid\",\"frames\":[innermost first]}, or\n"
      "{\"pid\",\"error\"} when it cannot be traced. The process is attached with ptrace,\n"
      "unwound and detached; it is left running or stopped as it was.\n",
      f);
}

}  // namespace

int main(int argc, char** argv) {
  bool all = false;
  std::vector<pid_t> pids;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
    if (a == "--all-threads") {
      all = true;
      continue;
    }
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(a.c_str(), &end, 10);
    if (a.empty() || *end || errno || v <= 0 || v > INT_MAX) {
      std::fprintf(stderr, "scout-stack: '%s': expected a process id (a positive integer)\n", a.c_str());
      usage(stderr);
      return 2;
    }
    pids.push_back(static_cast<pid_t>(v));
  }
  if (pids.empty()) {
    usage(stderr);
    return 2;
  }
  bool ok = true;
  for (pid_t p : pids) ok &= trace(p, all);
  return ok ? 0 : 1;
}
