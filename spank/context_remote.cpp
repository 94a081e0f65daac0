// Remote (slurmstepd) context, running as the job's user: preload the probe
// into the tasks of a watched step (prepend to LD_PRELOAD, never overwrite,
// never twice), tell it the job and step, and create the job's runtime
// directory for the scoutds' control sockets. Batch and extern steps and the
// companion step itself are never touched.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include <slurm/slurm.h>

#include "spank/plugin_state.hpp"

namespace scout::spank {

namespace {
std::string job_env(spank_t sp, const char* name) {
  char buf[4096];
  if (spank_getenv(sp, name, buf, sizeof buf) == ESPANK_SUCCESS) return buf;
  return "";
}
}  // namespace

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
  bool present = false;
  for (std::size_t pos = 0; pos <= preload.size();) {
    std::size_t end = preload.find_first_of(": ", pos);
    if (end == std::string::npos) end = preload.size();
    if (preload.compare(pos, end - pos, cfg.probe) == 0) present = true;
    pos = end + 1;
  }
  if (!present) {
    std::string v = preload.empty() ? cfg.probe : cfg.probe + ":" + preload;
    spank_setenv(sp, "LD_PRELOAD", v.c_str(), 1);
  }
  spank_setenv(sp, "SCOUT_JOB_ID", std::to_string(job).c_str(), 1);
  spank_setenv(sp, "SCOUT_STEP_ID", std::to_string(step).c_str(), 1);
  const std::string dir = cfg.runtime_dir + "/" + std::to_string(job);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    st.deferred_error = "scout: remote: runtime directory " + dir + ": " + std::strerror(errno);
  return 0;
}

}  // namespace scout::spank
