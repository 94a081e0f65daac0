// Remote (slurmstepd) context. As root, in slurm_spank_init, before any
// task or companion of the step exists: the job's runtime and spool
// directories are made for the job's user (common/runtime_paths.hpp: no
// link followed, no window in which another user's name stands there), and
// other users' files named after the step in /dev/shm are removed. As the
// job's user, in user_init: preload the probe into the tasks of a watched
// step (added to LD_PRELOAD, never overwriting, never twice), tell it the
// job and step. Batch and extern steps and the companion step itself are
// never touched.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <slurm/slurm.h>

#include "common/runtime_paths.hpp"
#include "common/spool_paths.hpp"
#include "libc3/rank_record.hpp"
#include "spank/plugin_state.hpp"

namespace scout::spank {

namespace {
// A variable of the job's environment, whole: spank_getenv copies into the
// caller's buffer and says ESPANK_NOSPACE when it is too small, so the
// buffer grows until the value fits (an exec'd program's variable is at
// most 128 KiB; 4 MiB bounds the loop).
spank_err_t job_env(spank_t sp, const char* name, std::string& out) {
  std::vector<char> buf(4096);
  for (;;) {
    const spank_err_t rc = spank_getenv(sp, name, buf.data(), static_cast<int>(buf.size()));
    if (rc == ESPANK_SUCCESS) {
      out.assign(buf.data());
      return rc;
    }
    out.clear();
    if (rc != ESPANK_NOSPACE || buf.size() >= (std::size_t{4} << 20)) return rc;
    buf.resize(buf.size() * 4);
  }
}

std::string job_env(spank_t sp, const char* name) {
  std::string v;
  job_env(sp, name, v);
  return v;
}

// Whether the caller's effective credentials (the job's user in user_init:
// slurmstepd has only seteuid'd, its real uid is still root's) may read `path`.
bool readable_by_user(const std::string& path) {
  return ::faccessat(AT_FDCWD, path.c_str(), R_OK, AT_EACCESS) == 0;
}

// A file of this step's name in /dev/shm that is not the job user's own
// regular file was made by someone else before the job: removed (root may,
// even in a sticky directory).
void claim_file(const std::string& path, uid_t uid) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  if (S_ISREG(st.st_mode) && st.st_uid == uid) return;
  const std::string done =
      ::unlink(path.c_str()) == 0 ? "removed" : "could not be removed: " + std::string(std::strerror(errno));
  slurm_info("scout: %s was created by uid %u before this job (of uid %u) and %s", path.c_str(),
             static_cast<unsigned>(st.st_uid), static_cast<unsigned>(uid), done.c_str());
}
}  // namespace

// Root, in slurmstepd, before any task or companion of the step exists
// (slurm_spank_init, remote context). The job's names in shared directories
// are predictable (/run/scout/JOB, SPOOL/JOB, /dev/shm/scout.JOB.STEP.*), so
// another user could make them in advance for an upcoming job id. The job's
// runtime and spool directories are made here by root, 0700, the job's
// user's, replacing in one rename whatever else stands at their names; a
// directory already there that is the job user's 0700 is another step's of
// the same job (the companion's and the tasks' start together) and is kept.
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
  // The runtime root and the spool are made root's 0755 when missing (never
  // world-writable); one that another user could rename things in is refused.
  for (const std::string* parent : {&cfg.runtime_dir, &cfg.spool}) {
    std::string note, why;
    if (!common::make_job_directory(*parent, j, uid, gid, &note, &why))
      slurm_error("scout: init: %s; the job's scoutds will not find their directory", why.c_str());
    if (!note.empty()) slurm_info("scout: %s", note.c_str());
  }
  // Records of this step in /dev/shm.
  if (DIR* d = ::opendir("/dev/shm")) {
    const std::string prefix = c3::record_shm_prefix(j, s);  // the one place the scheme is built
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind(prefix, 0) == 0) claim_file("/dev/shm/" + n, uid);
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
  if (!readable_by_user(cfg.probe)) {
    st.deferred_error = "scout: remote: probe " + cfg.probe + " is not readable by this user: " +
                        std::strerror(errno) + "; tasks run unobserved";
    return 0;
  }
  // --scout-ckpt-dir, checked here as the job's user (slurmstepd, as root,
  // only took it down: root's look would tell her whether a path she cannot
  // read exists).
  if (!st.opt_ckpt_dir.empty())
    if (std::string e = ckpt_dir_error(st.opt_ckpt_dir); !e.empty()) {
      st.deferred_error = e;
      return 0;
    }
  // The user's LD_PRELOAD is read whole (any length) and kept; the probes
  // go first. One that Slurm could not carry with the probe is left as it is
  // and the step runs unobserved, with the reason.
  std::string preload;
  if (const spank_err_t rc = job_env(sp, "LD_PRELOAD", preload); rc != ESPANK_SUCCESS && rc != ESPANK_ENV_NOEXIST) {
    st.deferred_error = std::string("scout: remote: cannot read the job's LD_PRELOAD: ") + spank_strerror(rc) +
                        "; tasks run unobserved";
    return 0;
  }
  std::vector<std::string> probes = {cfg.probe};
  // The NCCL probe when installed (a build without NCCL has none: not an error).
  if (!cfg.nccl_probe.empty() && readable_by_user(cfg.nccl_probe)) probes.push_back(cfg.nccl_probe);
  std::string why;
  const auto v = common::compose_ld_preload(preload, probes, &why);
  if (!v) {
    st.deferred_error = "scout: remote: " + why + "; tasks run unobserved";
    return 0;
  }
  if (*v != preload) {
    // Slurm drops a variable it finds too long and still says success: read back.
    std::string set;
    if (spank_setenv(sp, "LD_PRELOAD", v->c_str(), 1) != ESPANK_SUCCESS ||
        job_env(sp, "LD_PRELOAD", set) != ESPANK_SUCCESS || set != *v) {
      st.deferred_error = "scout: remote: Slurm did not set LD_PRELOAD (" + std::to_string(v->size()) +
                          " bytes with the probe); tasks run unobserved";
      return 0;
    }
  }
  spank_setenv(sp, "SCOUT_JOB_ID", std::to_string(job).c_str(), 1);
  spank_setenv(sp, "SCOUT_STEP_ID", std::to_string(step).c_str(), 1);
  // Root made it in slurm_spank_init; a slurmstepd that is not root's
  // (rootless test setups) leaves it to the user. Either way it must be a
  // directory of hers that no one else can enter: scoutctl trusts only
  // sockets of the job's user, but her scoutds should not bind elsewhere.
  const std::string dir = common::job_runtime_dir(cfg.runtime_dir, std::to_string(job));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    st.deferred_error = "scout: remote: runtime directory " + dir + ": " + std::strerror(errno);
    return 0;
  }
  struct stat ds {};
  if (::lstat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode) || ds.st_uid != ::geteuid() || (ds.st_mode & 077) != 0)
    st.deferred_error = "scout: remote: runtime directory " + dir +
                        " is not a directory of yours that only you may enter (uid " + std::to_string(ds.st_uid) +
                        "); the job's scoutds cannot serve their control sockets there";
  return 0;
}

}  // namespace scout::spank
