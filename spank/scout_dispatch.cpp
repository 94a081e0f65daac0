// scout.so, the SPANK plugin: `srun --scout=on` starts a scoutd companion on
// every node of the step and preloads the probe into the tasks. This file
// only dispatches on the SPANK context; the work is in context_local.cpp
// (srun) and context_remote.cpp (slurmstepd); sbatch/salloc (allocator) only
// validate and forward the options. Exceptions never cross into Slurm, and
// scout never fails a job because scout itself failed unless the site set
// required=yes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/settings.hpp"
#include "spank/plugin_state.hpp"

// The plugin's identity symbols: declared extern first, since a const at
// namespace scope would otherwise have internal linkage in C++.
#pragma GCC visibility push(default)
extern "C" {
extern const char plugin_name[];
extern const char plugin_type[];
extern const unsigned int plugin_version;
extern const unsigned int spank_plugin_version;
SPANK_PLUGIN(scout, 1)
}
#pragma GCC visibility pop

namespace scout::spank {

PluginState& state() {
  static PluginState s;
  return s;
}

namespace {
bool ckpt_dir_well_formed(const std::string& dir) { return !dir.empty() && dir != "(null)" && dir[0] == '/'; }
std::string ckpt_dir_invalid(const std::string& dir) {
  return "scout: option: --scout-ckpt-dir=" + dir +
         " is not valid; expected the absolute path of an existing directory, readable by you, that the job "
         "writes its checkpoints to";
}
}  // namespace

std::string ckpt_dir_error(const std::string& dir) {
  struct stat st {};
  if (ckpt_dir_well_formed(dir) && ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
      ::faccessat(AT_FDCWD, dir.c_str(), R_OK | X_OK, AT_EACCESS) == 0)
    return "";
  return ckpt_dir_invalid(dir);
}

bool scout_enabled(const char* sbatch_value) {
  auto& st = state();
  if (st.opt_scout >= 0) return st.opt_scout == 1;
  if (sbatch_value) {
    bool on = false;
    if (parse_on_off(sbatch_value, on)) return on;
  }
  return st.cfg.default_on;
}

namespace {

int opt_scout_cb(int, const char* optarg, int) {
  bool on = false;
  std::string v = optarg ? optarg : "(null)";
  if (!parse_on_off(v, on)) {
    slurm_error("scout: option: --scout=%s is not valid; expected --scout=on or --scout=off", v.c_str());
    return -1;
  }
  state().opt_scout = on ? 1 : 0;
  return 0;
}

int opt_stall_cb(int, const char* optarg, int) {
  std::string v = optarg ? optarg : "";
  std::string why;
  const auto d = common::parse_setting(common::kStallThreshold, v, &why);
  if (!d) {
    slurm_error("scout: option: --scout-stall-threshold=%s is not valid; %s", v.c_str(), why.c_str());
    return -1;
  }
  state().opt_stall = *d;
  return 0;
}

// In slurmstepd (remote) the callback runs as root: the value is only taken
// down there, and checked as the job's user in user_init (context_remote.cpp).
int opt_ckpt_cb(int, const char* optarg, int remote) {
  std::string v = optarg ? optarg : "";
  const bool in_slurmstepd = remote != 0 || spank_context() == S_CTX_REMOTE;
  const std::string err = in_slurmstepd ? (ckpt_dir_well_formed(v) ? "" : ckpt_dir_invalid(v)) : ckpt_dir_error(v);
  if (!err.empty()) {
    slurm_error("%s", err.c_str());
    return -1;
  }
  state().opt_ckpt_dir = v;
  return 0;
}

struct spank_option kOptions[] = {
    {const_cast<char*>("scout"), const_cast<char*>("on|off"),
     const_cast<char*>("[scout] watch this job with scout: on or off (default: site setting)"), 2, 0,
     opt_scout_cb},
    {const_cast<char*>("scout-stall-threshold"), const_cast<char*>("SECONDS"),
     const_cast<char*>("[scout] seconds without progress before scout examines a hang (default: the site's)"), 1, 0,
     opt_stall_cb},
    {const_cast<char*>("scout-ckpt-dir"), const_cast<char*>("DIR"),
     const_cast<char*>("[scout] certify the checkpoints written to DIR (scoutctl checkpoints|recovery)"), 1, 0,
     opt_ckpt_cb},
    SPANK_OPTIONS_TABLE_END};

}  // namespace
}  // namespace scout::spank

using namespace scout::spank;

extern "C" __attribute__((visibility("default"))) int slurm_spank_init(spank_t sp, int ac, char** av) {
  try {
    std::vector<std::string> args(av, av + ac);
    std::string err = parse_plugin_args(args, state().cfg);
    if (!err.empty()) {
      slurm_error("scout: init: %s", err.c_str());
      return -1;
    }
    spank_context_t ctx = spank_context();
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE || ctx == S_CTX_ALLOCATOR)
      for (auto* o = kOptions; o->name; ++o)
        if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
          slurm_error("scout: init: cannot register option --%s", o->name);
          return -1;
        }
    if (ctx == S_CTX_REMOTE) remote_prepare_names(sp);
    return 0;
  } catch (...) {
    slurm_error("scout: init: internal error");
    return -1;
  }
}

extern "C" __attribute__((visibility("default"))) int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  try {
    // An option given to sbatch reaches srun only through the environment.
    if (spank_context() == S_CTX_LOCAL) {
      auto& st = state();
      if (st.opt_stall < 0)
        if (const char* v = std::getenv(kSbatchStallEnv)) {
          if (opt_stall_cb(0, v, 0) != 0) return -1;
        }
      if (st.opt_ckpt_dir.empty())
        if (const char* v = std::getenv(kSbatchCkptEnv)) {
          if (opt_ckpt_cb(0, v, 0) != 0) return -1;
        }
      if (st.opt_scout < 0)
        if (const char* v = std::getenv(kSbatchOptionEnv)) {
          if (opt_scout_cb(0, v, 0) != 0) return -1;
        }
    }
    (void)sp;
    return 0;
  } catch (...) {
    return 0;
  }
}

extern "C" __attribute__((visibility("default"))) int slurm_spank_local_user_init(spank_t sp, int, char**) {
  try {
    return local_user_init(sp);
  } catch (...) {
    slurm_error("scout: local: internal error; the job runs unobserved");
    return state().cfg.required ? -1 : 0;
  }
}

extern "C" __attribute__((visibility("default"))) int slurm_spank_user_init(spank_t sp, int, char**) {
  try {
    if (spank_context() == S_CTX_REMOTE) return remote_user_init(sp);
    return 0;
  } catch (...) {
    state().deferred_error = "scout: remote: internal error";
    return 0;
  }
}

extern "C" __attribute__((visibility("default"))) int slurm_spank_task_init(spank_t, int, char**) {
  // Errors of user_init do not reach srun (Slurm bug 7573): report them here.
  auto& st = state();
  if (!st.deferred_error.empty()) {
    slurm_error("%s", st.deferred_error.c_str());
    return st.cfg.required ? -1 : 0;
  }
  return 0;
}

extern "C" __attribute__((visibility("default"))) int slurm_spank_exit(spank_t sp, int, char**) {
  try {
    if (spank_context() == S_CTX_LOCAL) return local_exit(sp);
    return 0;
  } catch (...) {
    return 0;
  }
}
