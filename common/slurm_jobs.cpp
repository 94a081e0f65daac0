// Slurm job look-ups (see slurm_jobs.hpp).
#include "common/slurm_jobs.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "common/spawn.hpp"
#include "common/untrusted_json.hpp"

namespace scout::common {

namespace {
bool decimal(const std::string& s) {
  return !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
}
std::string beside(const std::string& scontrol, const char* prog) {
  const auto slash = scontrol.find_last_of('/');
  return slash == std::string::npos ? std::string(prog) : scontrol.substr(0, slash + 1) + prog;
}
}  // namespace

std::optional<SlurmJob> parse_squeue_line(const std::string& line) {
  const auto a = line.find('|');
  const auto b = a == std::string::npos ? a : line.find('|', a + 1);
  if (b == std::string::npos) return std::nullopt;
  const auto c = line.find('|', b + 1);
  const std::string uid = line.substr(0, a), state = line.substr(a + 1, b - a - 1);
  std::string submitted, nodes = line.substr(b + 1);
  if (c != std::string::npos) {
    submitted = line.substr(b + 1, c - b - 1);
    nodes = line.substr(c + 1);
  }
  if (!decimal(uid) || state.empty() || state.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != std::string::npos ||
      nodes.find_first_of(" \t\n|") != std::string::npos)
    return std::nullopt;
  // Seconds since the epoch. Anything else ("Unknown", or a date where a
  // Slurm ignored SLURM_TIME_FORMAT) is no time: the job is still known.
  std::int64_t when = 0;
  if (decimal(submitted) && submitted.size() <= 12) when = std::strtoll(submitted.c_str(), nullptr, 10);
  SlurmJob j;
  j.submitted = when;
  j.uid = static_cast<uid_t>(std::strtoul(uid.c_str(), nullptr, 10));
  j.state = state;
  j.running = state == "RUNNING" || state == "COMPLETING" || state == "SUSPENDED";
  j.nodelist = nodes == "(null)" ? std::string() : nodes;
  return j;
}

std::vector<std::string> slurm_hostnames(const std::string& scontrol, const std::string& list, double timeout_s,
                                         std::string* why) {
  std::vector<std::string> out;
  if (list.empty()) return out;
  auto r = run_command({scontrol, "show", "hostnames", list}, timeout_s);
  if (!r.ok()) {
    if (why) *why = r.error;
    return out;
  }
  std::size_t pos = 0;
  while (pos < r.out.size()) {
    auto nl = r.out.find('\n', pos);
    if (nl == std::string::npos) nl = r.out.size();
    std::string n = r.out.substr(pos, nl - pos);
    pos = nl + 1;
    if (n.empty()) continue;
    if (!valid_node_name(n)) {
      if (why) *why = "scontrol show hostnames: not a node name";
      return {};
    }
    out.push_back(std::move(n));
  }
  return out;
}

std::optional<SlurmJob> slurm_job(const std::string& scontrol, const std::string& job, double timeout_s,
                                  std::string* why, bool expand) {
  if (!decimal(job)) {
    if (why) *why = fmt::format("job id '{}': expected a decimal job id", job.substr(0, 40));
    return std::nullopt;
  }
  const auto started = std::chrono::steady_clock::now();
  // SLURM_TIME_FORMAT is handed to strftime: "%s", seconds since the epoch,
  // whatever the time zone of either host.
  // %A first: the job id of each line. `-j` of an array's job id lists
  // every task of the array, each a job of its own; the one asked for is
  // the line whose id it is.
  auto r = run_command({"/usr/bin/env", "SLURM_TIME_FORMAT=%s", beside(scontrol, "squeue"), "-h", "-j", job,
                        "--states=all", "-o", "%A|%U|%T|%V|%N"},
                       timeout_s, std::size_t{1} << 20);
  if (!r.ok()) {
    if (why) *why = r.error;  // an unknown job makes squeue exit 1
    return std::nullopt;
  }
  std::string line;
  for (std::size_t pos = 0; pos < r.out.size();) {
    std::size_t nl = r.out.find('\n', pos);
    if (nl == std::string::npos) nl = r.out.size();
    std::string l = r.out.substr(pos, nl - pos);
    pos = nl + 1;
    if (l.rfind(job + "|", 0) == 0) {
      line = l.substr(job.size() + 1);
      break;
    }
  }
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  auto j = parse_squeue_line(line);
  if (!j) {
    if (why) *why = line.empty() ? fmt::format("Slurm does not know job {}", job) : "squeue: unexpected output";
    return std::nullopt;
  }
  const double left = timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (expand && !j->nodelist.empty()) j->nodes = slurm_hostnames(scontrol, j->nodelist, std::max(left, 1.0), why);
  return j;
}

}  // namespace scout::common
