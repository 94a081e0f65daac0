// Default locations, the job's directory made by root, and the probe's
// LD_PRELOAD (see runtime_paths.hpp). No libfmt: the SPANK plugin compiles
// this file too, and srun should not load it. make_job_directory runs as root
// in slurmstepd: it never follows a link and never acts on a name twice
// (every step after the parent's open is relative to its descriptor).
#include "common/runtime_paths.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>


namespace scout::common {

std::string default_ledger_path() {
  if (const char* l = std::getenv("SCOUT_LEDGER"); l && *l) return l;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/scout/ledger.db";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/state/scout/ledger.db";
  return "/tmp/scout-" + std::to_string(getuid()) + "/ledger.db";
}

std::string default_runtime_root() {
  if (const char* r = std::getenv("SCOUT_RUNTIME_DIR"); r && *r) return r;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return std::string(x) + "/scout";
  return "/tmp/scout-" + std::to_string(getuid());
}

std::optional<std::string> control_runtime_root(std::string* why) {
  if (::getuid() != 0) return default_runtime_root();
  if (const char* r = std::getenv("SCOUT_RUNTIME_DIR"); r && *r) return std::string(r);
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return std::string(x) + "/scout";
  if (why)
    *why = "no runtime directory: expected --runtime-dir DIR, $SCOUT_RUNTIME_DIR or $XDG_RUNTIME_DIR (root has no "
           "default under /tmp, where any user can make the name first; a Slurm job's is the plugstack's "
           "runtime_dir, /run/scout by default)";
  return std::nullopt;
}

std::string job_runtime_dir(const std::string& root, const std::string& job_id) {
  return root + "/" + job_id;
}

std::string control_socket_path(const std::string& job_dir, const std::string& node) {
  return job_dir + "/scoutd." + node + ".sock";
}

bool is_control_socket_name(const std::string& name) {
  return name.size() > 12 && name.rfind("scoutd.", 0) == 0 && name.compare(name.size() - 5, 5, ".sock") == 0;
}

std::vector<std::string> list_control_sockets(const std::string& job_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& ent : std::filesystem::directory_iterator(job_dir, ec))
    if (is_control_socket_name(ent.path().filename().string())) out.push_back(ent.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// Closes a descriptor on every path out.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int release() {
    const int f = fd;
    fd = -1;
    return f;
  }
};

// 16 hex digits from the kernel: a name nobody can make in advance.
bool random_suffix(std::string& out, std::string* why) {
  unsigned char raw[8];
  std::size_t got = 0;
  while (got < sizeof raw) {
    const ssize_t n = ::getrandom(raw + got, sizeof raw - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (why) *why = std::string("getrandom: ") + std::strerror(errno);
      return false;
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  out.clear();
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return true;
}

// Others may add entries, and move or replace those that are not theirs.
bool open_to_others(const struct stat& st) {
  return (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0;
}

std::string mode_text(mode_t m) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", static_cast<unsigned>(m & 07777));
  return b;
}

std::string kind_text(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISREG(m)) return "a file";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISFIFO(m)) return "a FIFO";
  return "a special file";
}

// The job's directory as root leaves it: the job user's, 0700, a directory.
bool as_root_makes_it(const struct stat& st, uid_t uid) {
  return S_ISDIR(st.st_mode) && st.st_uid == uid && (st.st_mode & 07777) == 0700;
}

// A fresh directory in `pfd`, made by this process under a random name,
// checked on its own descriptor, then 0700 and uid:gid. Its name, or empty.
std::string make_fresh(int pfd, const std::string& name, uid_t uid, gid_t gid, std::string* why) {
  std::string fresh, r;
  for (int tries = 0;; ++tries) {
    if (!random_suffix(r, why)) return {};
    fresh = ".scout-new." + name + "." + r;
    if (::mkdirat(pfd, fresh.c_str(), 0700) == 0) break;
    if (errno != EEXIST || tries >= 8) {
      if (why) *why = fresh + ": " + std::strerror(errno);
      return {};
    }
  }
  Fd fd(::openat(pfd, fresh.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  std::string bad;
  if (fd.fd < 0 || ::fstat(fd.fd, &st) != 0) bad = std::strerror(errno);
  else if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) bad = "not the directory just made";
  else if (::fchmod(fd.fd, 0700) != 0 || ::fchown(fd.fd, uid, gid) != 0)
    bad = "chown to uid " + std::to_string(uid) + ": " + std::strerror(errno);
  if (!bad.empty()) {
    ::unlinkat(pfd, fresh.c_str(), AT_REMOVEDIR);
    if (why) *why = fresh + ": " + bad;
    return {};
  }
  return fresh;
}

// What was exchanged away, now at `at` in `pfd`: a directory is left there
// under a name that says what it is (random too), anything else removed.
std::string dispose(int pfd, const std::string& parent, const std::string& name, const std::string& at,
                    const struct stat& st) {
  if (S_ISDIR(st.st_mode)) {
    std::string r;
    if (random_suffix(r, nullptr)) {
      const std::string aside = ".scout-refused." + name + "." + std::to_string(st.st_uid) + "." + r;
      if (::renameat2(pfd, at.c_str(), pfd, aside.c_str(), RENAME_NOREPLACE) == 0)
        return "moved aside to " + parent + "/" + aside;
    }
    return "moved aside to " + parent + "/" + at;
  }
  if (::unlinkat(pfd, at.c_str(), 0) == 0) return "removed";
  return "moved aside to " + parent + "/" + at + " (could not be removed: " + std::strerror(errno) + ")";
}

std::string planted(const std::string& path, const struct stat& st, uid_t uid) {
  return path + " was created by uid " + std::to_string(st.st_uid) + " before this job (of uid " +
         std::to_string(uid) + "; " + kind_text(st.st_mode) + ", mode " + mode_text(st.st_mode) + ")";
}

}  // namespace

int open_trusted_dir(const std::string& path, bool create_last, std::string* why) {
  auto fail = [why](const std::string& w) {
    if (why) *why = w;
    return -1;
  };
  if (path.empty() || path[0] != '/') return fail("'" + path + "': expected an absolute path");
  Fd fd(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.fd < 0) return fail(std::string("/: ") + std::strerror(errno));
  std::string so_far;
  std::size_t pos = 0;
  for (;;) {
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0) return fail((so_far.empty() ? "/" : so_far) + ": " + std::strerror(errno));
    const std::string shown = so_far.empty() ? "/" : so_far;
    if (st.st_uid != 0)
      return fail(shown + ": owned by uid " + std::to_string(st.st_uid) + "; expected a directory of root's");
    if (open_to_others(st))
      return fail(shown + ": mode " + mode_text(st.st_mode) +
                  " lets other users replace what root makes there; expected 0755 (or sticky, 1777)");
    pos = path.find_first_not_of('/', pos);
    if (pos == std::string::npos) return fd.release();
    std::size_t end = path.find('/', pos);
    if (end == std::string::npos) end = path.size();
    const std::string c = path.substr(pos, end - pos);
    pos = end;
    if (c == ".") continue;
    if (c == "..") return fail(path + ": expected a path without '..'");
    so_far += "/" + c;
    const bool last = path.find_first_not_of('/', end) == std::string::npos;
    int next = ::openat(fd.fd, c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    bool made = false;
    if (next < 0 && errno == ENOENT && last && create_last) {
      if (::mkdirat(fd.fd, c.c_str(), 0755) == 0) made = true;
      else if (errno != EEXIST) return fail(so_far + ": " + std::strerror(errno));
      next = ::openat(fd.fd, c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (next < 0)
      return fail(so_far + ": " + (errno == ELOOP || errno == ENOTDIR ? std::string("not a directory (a symbolic link?)")
                                                                      : std::string(std::strerror(errno))));
    Fd opened(next);
    if (made) ::fchmod(opened.fd, 0755);  // whatever the umask: exactly 0755, root's
    ::close(fd.fd);
    fd.fd = opened.release();
  }
}

bool make_job_directory(const std::string& parent, const std::string& name, uid_t uid, gid_t gid, std::string* note,
                        std::string* why) {
  if (note) note->clear();
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    if (why) *why = "'" + name + "': expected a job id";
    return false;
  }
  std::string w;
  Fd pfd(open_trusted_dir(parent, true, &w));
  const std::string path = parent + "/" + name;
  auto fail = [&](const std::string& m) {
    if (why) *why = path + ": " + m;
    return false;
  };
  if (pfd.fd < 0) return fail(w);
  const int p = pfd.fd;
  // A few rounds at most: each ends with the name root's, or with something
  // new there that is looked at again (a step of the same job that made it
  // meanwhile; on a file system without RENAME_EXCHANGE, a user re-making it).
  for (int round = 0; round < 16; ++round) {
    struct stat st {};
    const bool absent = ::fstatat(p, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0;
    if (absent && errno != ENOENT) return fail(std::strerror(errno));
    if (!absent && as_root_makes_it(st, uid)) return true;  // made by a step of this job before
    const std::string fresh = make_fresh(p, name, uid, gid, &w);
    if (fresh.empty()) return fail(w);
    if (absent) {
      if (::renameat2(p, fresh.c_str(), p, name.c_str(), RENAME_NOREPLACE) == 0) return true;
      const int e = errno;
      ::unlinkat(p, fresh.c_str(), AT_REMOVEDIR);
      if (e == EEXIST || e == ENOENT) continue;  // someone made it meanwhile / took ours: look again
      return fail(std::strerror(e));
    }
    // Something else stands there: ours takes its place in one step.
    if (::renameat2(p, fresh.c_str(), p, name.c_str(), RENAME_EXCHANGE) == 0) {
      struct stat old {};
      if (::fstatat(p, fresh.c_str(), &old, AT_SYMLINK_NOFOLLOW) != 0) return true;  // gone already
      if (as_root_makes_it(old, uid)) {
        // Another step of this job put its own in place since the look
        // above: that one goes back (it may hold a socket already).
        if (::renameat2(p, fresh.c_str(), p, name.c_str(), RENAME_EXCHANGE) == 0)
          ::unlinkat(p, fresh.c_str(), AT_REMOVEDIR);
        return true;
      }
      const std::string done = dispose(p, parent, name, fresh, old);
      if (note) *note = planted(path, old, uid) + " and " + done;
      return true;
    }
    const int e = errno;
    if (e == ENOENT) {  // gone meanwhile: look again
      ::unlinkat(p, fresh.c_str(), AT_REMOVEDIR);
      continue;
    }
    if (e != EINVAL && e != ENOSYS && e != EOPNOTSUPP) {
      ::unlinkat(p, fresh.c_str(), AT_REMOVEDIR);
      return fail(std::string("cannot take the name back: ") + std::strerror(e));
    }
    // No RENAME_EXCHANGE on this file system: what stands there is moved
    // aside under a random name, then ours put in place without replacing;
    // anything made there meanwhile is looked at again in the next round.
    std::string r, aside;
    if (!random_suffix(r, &w)) {
      ::unlinkat(p, fresh.c_str(), AT_REMOVEDIR);
      return fail(w);
    }
    aside = ".scout-refused." + name + "." + std::to_string(st.st_uid) + "." + r;
    if (::renameat2(p, name.c_str(), p, aside.c_str(), RENAME_NOREPLACE) != 0 && errno != ENOENT) {
      const int e2 = errno;
      ::unlinkat(p, fresh.c_str(), AT_REMOVEDIR);
      return fail(std::string("cannot move it aside: ") + std::strerror(e2));
    }
    struct stat moved {};
    if (::fstatat(p, aside.c_str(), &moved, AT_SYMLINK_NOFOLLOW) == 0 && as_root_makes_it(moved, uid) &&
        ::renameat2(p, aside.c_str(), p, name.c_str(), RENAME_NOREPLACE) == 0) {
      ::unlinkat(p, fresh.c_str(), AT_REMOVEDIR);  // another step's, made since the look above: it goes back
      return true;
    }
    if (::fstatat(p, aside.c_str(), &moved, AT_SYMLINK_NOFOLLOW) == 0) {
      const std::string done = S_ISDIR(moved.st_mode) || ::unlinkat(p, aside.c_str(), 0) != 0
                                   ? "moved aside to " + parent + "/" + aside
                                   : std::string("removed");
      if (note) *note = planted(path, moved, uid) + " and " + done;
    }
    if (::renameat2(p, fresh.c_str(), p, name.c_str(), RENAME_NOREPLACE) == 0) return true;
    ::unlinkat(p, fresh.c_str(), AT_REMOVEDIR);
  }
  return fail("another process keeps making this name; not taken back after 16 rounds");
}

std::optional<std::string> compose_ld_preload(const std::string& user, const std::vector<std::string>& probes,
                                              std::string* why) {
  auto named = [](const std::string& list, const std::string& lib) {
    for (std::size_t pos = 0; pos <= list.size();) {
      std::size_t end = list.find_first_of(": ", pos);
      if (end == std::string::npos) end = list.size();
      if (end - pos == lib.size() && list.compare(pos, end - pos, lib) == 0) return true;
      pos = end + 1;
    }
    return false;
  };
  std::string add;
  for (auto& p : probes)
    if (!p.empty() && !named(user, p) && !named(add, p)) add += (add.empty() ? "" : ":") + p;
  if (add.empty()) return user;
  std::string v = user.empty() ? add : add + ":" + user;
  if (v.size() > kMaxLdPreloadBytes) {
    if (why)
      *why = "LD_PRELOAD would be " + std::to_string(v.size()) + " bytes with scout's probe (" +
             std::to_string(user.size()) + " of them yours); Slurm sets at most " +
             std::to_string(kMaxLdPreloadBytes) + " bytes; yours is kept as it is and the probe is not added";
    return std::nullopt;
  }
  return v;
}

}  // namespace scout::common
