// State of the scout SPANK plugin inside one Slurm process (srun, sbatch or
// slurmstepd), shared by the dispatcher and the per-context files. Messages
// start with "scout: <phase>:".
#pragma once

#include <sys/types.h>

#include <string>

extern "C" {
#include <slurm/spank.h>
}

#include "spank/plugin_config.hpp"

namespace scout::spank {

struct PluginState {
  PluginConfig cfg;
  int opt_scout = -1;         // -1 not set, 0 off, 1 on
  double opt_stall = -1;      // -1 not set
  std::string opt_ckpt_dir;   // --scout-ckpt-dir
  pid_t companion = -1;       // srun of the companion step (local context)
  int ready_fd = -1;          // its stdout, where the scoutds say they are ready
  std::string deferred_error; // user_init errors reach srun only from task_init
};

PluginState& state();

// Environment: the companion's recursion guard, and sbatch's options as srun sees them.
inline constexpr const char* kCompanionEnv = "SCOUT_COMPANION";
inline constexpr const char* kSbatchOptionEnv = "SLURM_SPANK__SLURM_SPANK_OPTION_scout_scout";
inline constexpr const char* kSbatchStallEnv = "SLURM_SPANK__SLURM_SPANK_OPTION_scout_scout_stall_threshold";
inline constexpr const char* kSbatchCkptEnv = "SLURM_SPANK__SLURM_SPANK_OPTION_scout_scout_ckpt_dir";

// Per-context entry points (context_local.cpp, context_remote.cpp).
int local_user_init(spank_t sp);
int local_exit(spank_t sp);
int remote_user_init(spank_t sp);
int remote_prepare_names(spank_t sp);  // root, before the step's tasks

// Whether scout is on for this step: option, then sbatch's option in the
// environment, then the site default.
bool scout_enabled(const char* sbatch_value);

// --scout-ckpt-dir=DIR checked with the caller's effective credentials (the
// user's: srun, sbatch, or slurmstepd's user_init; never root's look on her
// behalf): empty when DIR is an absolute path of a directory she can read
// and enter, else the one error for every reason (missing, unreadable to
// her, not a directory), so it tells her nothing she could not see herself.
std::string ckpt_dir_error(const std::string& dir);

}  // namespace scout::spank
