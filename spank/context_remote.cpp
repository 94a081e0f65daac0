// Remote (slurmstepd) context, running as the job's user: preload the probe
// into the tasks of a watched step (prepend to LD_PRELOAD, never overwrite,
// never twice), tell it the job and step, and create the job's runtime
// directory for the scoutds' control sockets. Batch and extern steps and the
// companion step itself are never touched.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <slurm/slurm.h>

#include "common/runtime_paths.hpp"
#include "common/spool_paths.hpp"
#include "libc3/rank_record.hpp"
#include "spank/plugin_state.hpp"

namespace scout::spank {

namespace {
std::string job_env(spank_t sp, const char* name) {
  char buf[4096];
  if (spank_getenv(sp, name, buf, sizeof buf) == ESPANK_SUCCESS) return buf;
  return "";
}
}  // namespace

namespace {
// A name of this job that someone else made: files are removed (root may,
// even in a sticky directory), directories moved aside under a unique name.
// Returns what was done, for the log.
std::string take_back(const std::string& path, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) {
    const auto slash = path.find_last_of('/');
    const std::string aside = path.substr(0, slash + 1) + ".scout-refused." + path.substr(slash + 1) + "." +
                              std::to_string(st.st_uid) + "." + std::to_string(::getpid()) + "." +
                              std::to_string(std::time(nullptr));
    return ::rename(path.c_str(), aside.c_str()) == 0 ? "moved aside to " + aside
                                                      : "could not be moved aside: " + std::string(std::strerror(errno));
  }
  return ::unlink(path.c_str()) == 0 ? "removed" : "could not be removed: " + std::string(std::strerror(errno));
}

// Takes back `path` unless it is absent or `kind` (S_IFDIR or S_IFREG) owned by `uid`.
void claim(const std::string& path, mode_t kind, uid_t uid) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  if ((st.st_mode & S_IFMT) == kind && st.st_uid == uid) return;
  const std::string done = take_back(path, st);
  slurm_info("scout: %s was created by uid %u before this job (of uid %u) and %s", path.c_str(),
             static_cast<unsigned>(st.st_uid), static_cast<unsigned>(uid), done.c_str());
}

// Makes `path` (absent) a directory of uid:gid, 0700, in one step that the
// job's other slurmstepds see whole: a job's steps (the tasks' and the
// companion's) start together on a node, each running this, and a directory
// seen between its mkdir and its chown would be root's, taken back by the
// other step as planted. So it is made under a name of this process, owned,
// and renamed into place without replacing what another step put there.
void make_job_dir(const std::string& path, uid_t uid, gid_t gid) {
  const std::string tmp = path + ".new." + std::to_string(::getpid());
  ::rmdir(tmp.c_str());
  if (::mkdir(tmp.c_str(), 0700) != 0) {
    slurm_info("scout: %s: %s", tmp.c_str(), std::strerror(errno));
    return;
  }
  if (::lchown(tmp.c_str(), uid, gid) != 0) {
    slurm_info("scout: %s: chown to uid %u: %s", tmp.c_str(), static_cast<unsigned>(uid), std::strerror(errno));
    ::rmdir(tmp.c_str());
    return;
  }
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
    if (errno != EEXIST) slurm_info("scout: %s: %s", path.c_str(), std::strerror(errno));
    ::rmdir(tmp.c_str());
  }
}
}  // namespace

// Root, in slurmstepd, before any task or companion of the step exists
// (slurm_spank_init, remote context). The job's names in shared directories
// are predictable (/run/scout/JOB, SPOOL/JOB, /dev/shm/scout.JOB.STEP.*), so
// another user could make them in advance for an upcoming job id. Whatever of
// them is not the job user's own is taken back here, and the job's runtime
// and spool directories are made by root: 0700, owned by the job's user.
int remote_prepare_names(spank_t sp) {
  if (::geteuid() != 0) return 0;
  std::uint32_t job = 0, step = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS)
    return 0;
  const auto& cfg = state().cfg;
  const std::string j = std::to_string(job), s = std::to_string(step);
  const std::string dir = common::job_runtime_dir(cfg.runtime_dir, j);
  claim(dir, S_IFDIR, uid);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) make_job_dir(dir, uid, gid);
  // The job's spool directory: made here by root, the job's user's, 0700.
  // The spool itself is made root's 0755 when missing (never world-writable).
  if (::lstat(cfg.spool.c_str(), &st) != 0 && ::mkdir(cfg.spool.c_str(), 0755) != 0 && errno != EEXIST)
    slurm_info("scout: spool %s: %s", cfg.spool.c_str(), std::strerror(errno));
  const std::string job_spool = common::spool_job_dir(cfg.spool, j);
  claim(job_spool, S_IFDIR, uid);
  if (::lstat(job_spool.c_str(), &st) != 0) make_job_dir(job_spool, uid, gid);
  // Records of this step in /dev/shm.
  if (DIR* d = ::opendir("/dev/shm")) {
    const std::string prefix = c3::record_shm_prefix(j, s);  // the one place the scheme is built
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind(prefix, 0) == 0) claim("/dev/shm/" + n, S_IFREG, uid);
    }
    ::closedir(d);
  }
  return 0;
}

int remote_user_init(spank_t sp) {
  auto& st = state();
  std::uint32_t job = 0, step = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
    return 0;
  if (step == SLURM_BATCH_SCRIPT || step == SLURM_EXTERN_CONT) return 0;
  if (!job_env(sp, kCompanionEnv).empty()) return 0;
  // Watched when --scout=on reached this step: srun's option (callback in
  // this process) or sbatch's, carried in the job's environment.
  const std::string sbatch = job_env(sp, kSbatchOptionEnv);
  if (!scout_enabled(sbatch.empty() ? nullptr : sbatch.c_str())) return 0;
  const auto& cfg = st.cfg;
  if (::access(cfg.probe.c_str(), R_OK) != 0) {
    st.deferred_error = "scout: remote: probe " + cfg.probe + " is not readable by this user: " +
                        std::strerror(errno) + "; tasks run unobserved";
    return 0;
  }
  std::string preload = job_env(sp, "LD_PRELOAD");
  auto present = [&preload](const std::string& lib) {
    for (std::size_t pos = 0; pos <= preload.size();) {
      std::size_t end = preload.find_first_of(": ", pos);
      if (end == std::string::npos) end = preload.size();
      if (preload.compare(pos, end - pos, lib) == 0) return true;
      pos = end + 1;
    }
    return false;
  };
  std::string add;
  if (!present(cfg.probe)) add = cfg.probe;
  // The NCCL probe when installed (a build without NCCL has none: not an error).
  if (!cfg.nccl_probe.empty() && !present(cfg.nccl_probe) && ::access(cfg.nccl_probe.c_str(), R_OK) == 0)
    add += (add.empty() ? "" : ":") + cfg.nccl_probe;
  if (!add.empty()) {
    std::string v = preload.empty() ? add : add + ":" + preload;
    spank_setenv(sp, "LD_PRELOAD", v.c_str(), 1);
  }
  spank_setenv(sp, "SCOUT_JOB_ID", std::to_string(job).c_str(), 1);
  spank_setenv(sp, "SCOUT_STEP_ID", std::to_string(step).c_str(), 1);
  const std::string dir = common::job_runtime_dir(cfg.runtime_dir, std::to_string(job));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    st.deferred_error = "scout: remote: runtime directory " + dir + ": " + std::strerror(errno);
  return 0;
}

}  // namespace scout::spank
