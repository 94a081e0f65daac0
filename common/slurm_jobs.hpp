// What Slurm says of a job, asked through fixed-format fields that no user
// text can reach (`squeue -h -j JOB --states=all -o %A|%U|%T|%V|%N`: the
// line of the job whose id it is, its uid, state, submission time in
// seconds since the epoch (SLURM_TIME_FORMAT=%s) and node list; never the
// job's name or comment), and node lists expanded by
// `scontrol show hostnames`. Each call runs the program with an argument
// vector and a deadline (common/spawn.hpp).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace scout::common {

struct SlurmJob {
  uid_t uid = 0;
  std::string state;               // RUNNING, COMPLETING, COMPLETED, ...
  // When the job was submitted (seconds since the epoch, 0 when Slurm did
  // not say): what tells this job from an earlier one given the same id.
  std::int64_t submitted = 0;
  bool running = false;            // RUNNING, COMPLETING or SUSPENDED
  std::string nodelist;            // as Slurm writes it, e.g. n[1-3]
  std::vector<std::string> nodes;  // expanded
};

// `scontrol` may be a path: squeue is looked up beside it. With `expand`
// the node list is also expanded into `nodes` (one more program run).
std::optional<SlurmJob> slurm_job(const std::string& scontrol, const std::string& job, double timeout_s,
                                  std::string* why = nullptr, bool expand = true);
// Parses one line of the squeue format above (exposed for tests); a line of
// three fields (uid|state|nodes, an older caller's format) has no submission
// time.
std::optional<SlurmJob> parse_squeue_line(const std::string& line);
// `scontrol show hostnames LIST`: empty (with why) when Slurm cannot say.
std::vector<std::string> slurm_hostnames(const std::string& scontrol, const std::string& list, double timeout_s,
                                         std::string* why = nullptr);

}  // namespace scout::common
