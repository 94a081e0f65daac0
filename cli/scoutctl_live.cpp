// scoutctl's commands that talk to a live job's scoutds through their
// control sockets and need more than one exchange: stacks (every rank's
// stack now) and set (retune the running job).
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "cli/control_client.hpp"
#include "cli/scoutctl.hpp"
#include "common/runtime_paths.hpp"
#include "common/tunables.hpp"
#include "common/untrusted_json.hpp"
#include "scoutd/detect/stack_classes.hpp"
#include "scoutd/wire/control_protocol.hpp"

namespace scout::cli {

using nlohmann::json;
namespace sd = scout::scoutd;

// Whose scoutds may answer for a job, besides root and the caller: the owner
// of the job's runtime directory, which the SPANK plugin (root) made 0700 for
// the job's user (a name planted there before the job is taken back then).
long job_dir_owner(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || (st.st_mode & 077) != 0) return -1;
  return static_cast<long>(st.st_uid);
}

// The control sockets of a job's scoutds, sorted; dies with exit 5 (naming
// the command) when there is none.
std::vector<std::string> job_sockets(const Args& a, std::string& dir) {
  std::string root = a.runtime_dir.empty() ? scout::common::default_runtime_root() : a.runtime_dir;
  dir = scout::common::job_runtime_dir(root, a.job);
  auto sockets = scout::common::list_control_sockets(dir);
  if (sockets.empty())
    die(kExitUnreachable, fmt::format("{}: job {} has no running scoutd (no sockets in {})", a.command, a.job, dir));
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
