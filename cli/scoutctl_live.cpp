// scoutctl's commands that talk to a live job's scoutds through their
// control sockets and need more than one exchange: stacks (every rank's
// stack now) and set (retune the running job); and where every command
// finds a job's sockets and whose answers it takes (root: the job's user as
// Slurm says, see job_dir_owner).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "cli/control_client.hpp"
#include "cli/scoutctl.hpp"
#include "common/runtime_paths.hpp"
#include "common/slurm_jobs.hpp"
#include "common/tunables.hpp"
#include "common/untrusted_json.hpp"
#include "scoutd/detect/stack_classes.hpp"
#include "scoutd/wire/control_protocol.hpp"

namespace scout::cli {

using nlohmann::json;
namespace sd = scout::scoutd;

namespace {
// The job's user as Slurm says, per runtime directory job_sockets listed.
std::map<std::string, long>& slurm_job_users() {
  static std::map<std::string, long> users;
  return users;
}
}  // namespace

// Whose scoutds may answer for a job, besides root and the caller: for root,
// the job's user as Slurm says (squeue's uid field, asked once per job by
// job_sockets), never the directory's owner: the directory may be one a user
// made, or hers to chmod. -1 (root and the caller only) for other callers
// and for a job Slurm does not know (scout-run's, whose scoutds are the
// caller's own). The name is the one scoutctl.hpp declares.
long job_dir_owner(const std::string& dir) {
  const auto& users = slurm_job_users();
  const auto it = users.find(dir);
  return it == users.end() ? -1 : it->second;
}

// The control sockets of a job's scoutds, sorted; dies with exit 5 (naming
// the command) when there is none, and with exit 2 when root names no
// runtime directory (root has no default under /tmp).
std::vector<std::string> job_sockets(const Args& a, std::string& dir) {
  std::string root = a.runtime_dir;
  if (root.empty()) {
    std::string why;
    const auto r = scout::common::control_runtime_root(&why);
    if (!r) die(kExitUsage, fmt::format("{}: {}", a.command, why));
    root = *r;
  }
  dir = scout::common::job_runtime_dir(root, a.job);
  auto sockets = scout::common::list_control_sockets(dir);
  if (sockets.empty())
    die(kExitUnreachable, fmt::format("{}: job {} has no running scoutd (no sockets in {})", a.command, a.job, dir));
  // Slurm is asked only when a socket is not root's (root's own scout-run
  // jobs need no squeue), once per job.
  if (::getuid() == 0 && !slurm_job_users().count(dir) &&
      std::any_of(sockets.begin(), sockets.end(), [](const std::string& p) {
        struct stat st {};
        return ::lstat(p.c_str(), &st) != 0 || st.st_uid != 0;
      })) {
    std::string why;
    const auto j = scout::common::slurm_job("scontrol", a.job, 10, &why, false);
    slurm_job_users()[dir] = j ? static_cast<long>(j->uid) : -1;
    if (!j)
      std::fprintf(stderr, "scoutctl: %s: warning: Slurm does not say whose job %s is (%s); only root's scoutds are "
                   "trusted\n", a.command.c_str(), a.job.c_str(), why.c_str());
  }
  return sockets;
}

// Where every rank of the job is now: each scoutd takes its ranks' stacks
// (scout-stack), and the stack-trace classes are printed as a tree.
int cmd_stacks(const Args& a) {
  std::string dir;
  const auto sockets = job_sockets(a, dir);
  std::vector<sd::RankStack> all;
  json ranks = json::array();
  int answered = 0;
  for (auto& path : sockets) {
    try {
      cli::ControlConnection c(path, 30, job_dir_owner(dir));
      c.request("SET FORMAT json");
      auto lines = c.request("STACKS");
      std::string why;  // a scoutd is the job's user's process: its reply is untrusted
      auto parsed = scout::common::parse_untrusted(lines.empty() ? "{}" : lines.front(), scout::common::kReplyLimits, &why);
      if (!parsed || !parsed->is_object() || !(*parsed)["ranks"].is_array())
        throw std::runtime_error("stacks reply: " + (why.empty() ? std::string("expected an object with ranks") : why));
      for (auto& r : (*parsed)["ranks"]) {
        if (!r.is_object() || !r.contains("rank") || !r["rank"].is_number_integer()) continue;
        sd::RankStack s;
        s.rank = r["rank"].get<int>();
        if (r.contains("frames") && r["frames"].is_array())
          for (auto& f : r["frames"])
            if (f.is_string() && s.frames.size() < 64) s.frames.push_back(f.get<std::string>().substr(0, 256));
        if (s.frames.empty()) s.error = r.value("error", std::string("no frames")).substr(0, 256);
        all.push_back(s);
        ranks.push_back(r);
      }
      ++answered;
      c.quit();
    } catch (const std::exception& e) {
      std::string msg = e.what();
      if (msg.rfind("ERROR:", 0) == 0) die(kExitUsage, fmt::format("stacks: {}", msg.substr(7)));
      std::fprintf(stderr, "scoutctl: stacks: %s: %s\n", path.c_str(), e.what());
    }
  }
  if (answered == 0)
    die(kExitUnreachable, fmt::format("stacks: no scoutd of job {} answered ({} sockets in {})", a.job,
                                      sockets.size(), dir));
  const json classes = sd::stack_classes(all);
  json out = {{"job", a.job}, {"node", fmt::format("{} of {} answered", answered, sockets.size())},
              {"ranks", ranks}, {"classes", classes}};
  if (a.json) std::puts(out.dump(2).c_str());
  else std::fputs(sd::render_stacks_text(out).c_str(), stdout);
  return kExitOk;
}

// Retunes the running job: the request goes to one scoutd, the deciding
// observer applies it at a round boundary and every observer adopts it; this
// waits (up to 20 s) until a scoutd shows the new settings version.
int cmd_set(const Args& a, const std::vector<std::string>& assignments) {
  if (assignments.empty())
    die(kExitUsage, fmt::format("set: expected key=value after the job id (keys: {})", common::tune_key_list()));
  common::Tunables check;
  std::string line = "TUNE";
  for (auto& s : assignments) {
    std::string k, v, why;
    if (!common::split_assignment(s, k, v, &why) || !common::set_tunable(check, k, v, &why))
      die(kExitUsage, "set: " + why);
    line += " " + k + "=" + v;
  }
  std::string dir;
  const auto sockets = job_sockets(a, dir);
  std::uint64_t before = 0;
  std::string via;
  for (auto& path : sockets) {
    try {
      ControlConnection c(path, 5, job_dir_owner(dir));
      c.request("SET FORMAT json");
      auto st = common::parse_untrusted(c.request("STATUS").front(), common::kReplyLimits, nullptr);
      if (st && st->is_object() && (*st)["settings"].is_object() && (*st)["settings"]["version"].is_number_unsigned())
        before = (*st)["settings"]["version"].get<std::uint64_t>();
      c.request(line);
      c.quit();
      via = path;
      break;
    } catch (const std::exception& e) {
      std::string msg = e.what();
      if (msg.rfind("ERROR:", 0) == 0) die(kExitUsage, fmt::format("set: {}", msg.substr(7)));
      std::fprintf(stderr, "scoutctl: set: %s: %s\n", path.c_str(), e.what());
    }
  }
  if (via.empty())
    die(kExitUnreachable, fmt::format("set: no scoutd of job {} answered ({} sockets in {})", a.job, sockets.size(), dir));
  // Wait for the deciding observer's answer: a new version, or a refusal.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    try {
      ControlConnection c(via, 5, job_dir_owner(dir));
      c.request("SET FORMAT json");
      auto st = common::parse_untrusted(c.request("STATUS").front(), common::kReplyLimits, nullptr);
      c.quit();
      if (!st || !st->is_object() || !(*st)["settings"].is_object()) continue;
      const json s = (*st)["settings"];
      if (s.value("pending", 1) != 0) continue;
      const std::uint64_t now = s.value("version", json(0)).is_number_unsigned() ? s["version"].get<std::uint64_t>() : 0;
      if (now > before) {
        if (a.json) {
          std::puts(json{{"job", a.job}, {"settings", s}}.dump(2).c_str());
        } else {
          for (auto& r : s.value("last_applied", json::array()))
            for (auto& ch : r.value("changes", json::array()))
              std::printf("job %s: %s %s -> %s (settings version %llu, set by %s)\n", a.job.c_str(),
                          sd::escape_text(ch.value("key", std::string())).c_str(),
                          sd::escape_text(ch.value("old", std::string())).c_str(),
                          sd::escape_text(ch.value("new", std::string())).c_str(),
                          static_cast<unsigned long long>(now), sd::escape_text(r.value("user", std::string())).c_str());
        }
        return kExitOk;
      }
      for (auto& r : s.value("last_refused", json::array()))
        if (r.is_object())
          die(kExitUsage, "set: refused by the deciding observer: " + sd::escape_text(r.value("why", std::string())));
    } catch (const std::exception&) {
    }
  }
  die(kExitInternal, fmt::format("set: queued at {}, but no new settings were in force within 20 s "
                                 "(the deciding observer applies them at a round boundary)", via));
}

}  // namespace scout::cli
