// Where a job's files live in the Slurm spool (plugstack key spool=, node-
// local on every node). Each job has its own directory SPOOL/JOB, made by
// root at step start on every node of the step (0700, owned by the job's
// user): nothing of a job is at a name another user can make first, and the
// spool itself needs no world-writable mode. One home for these names: the
// plugin, scoutctl and the epilog all build them here.
#pragma once

#include <string>

namespace scout::common {

inline std::string spool_job_dir(const std::string& spool, const std::string& job) { return spool + "/" + job; }
// The job's ledger, written by its scoutds (the job's user).
inline std::string spool_ledger(const std::string& spool, const std::string& job) {
  return spool_job_dir(spool, job) + "/" + job + ".db";
}
// A scoutd's log: one per step and node (`node` may be srun's "%N").
inline std::string spool_scoutd_log(const std::string& spool, const std::string& job, const std::string& step,
                                    const std::string& node) {
  return spool_job_dir(spool, job) + "/" + step + "." + node + ".scoutd.log";
}

}  // namespace scout::common
