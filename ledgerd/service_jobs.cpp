// What Slurm says of a job, as the service asks it (see service.hpp).
#include <fmt/format.h>

#include "common/log.hpp"
#include "common/slurm_jobs.hpp"
#include "common/untrusted_text.hpp"
#include "ledgerd/service.hpp"

namespace scout::ledgerd {

JobOracle slurm_oracle(std::string scontrol, double timeout_s) {
  return [scontrol, timeout_s](const std::string& job) -> std::optional<JobInfo> {
    std::string why;
    auto j = common::slurm_job(scontrol, job, timeout_s, &why);
    if (!j) {
      if (why.find("exited with status 1") == std::string::npos)  // 1: an unknown job
        log::warning("Slurm about job {}: {}", common::quoted(job, 24), common::printable_text(why, 1024));
      return std::nullopt;
    }
    return JobInfo{j->uid, j->running, j->nodes, j->submitted};
  };
}

}  // namespace scout::ledgerd
