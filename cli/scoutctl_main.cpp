// scoutctl: read scout's verdicts from the ledger (query) and ask a running
// job's scoutds for their live view (status). Exit codes (scoutctl(1)):
// 0 ok, 1 internal error, 2 usage or malformed job id, 3 unknown job,
// 4 ledger missing, unreadable or not a scout ledger, 5 no scoutd answers.
#include <poll.h>
#include <sys/socket.h>
#include <termios.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/control_client.hpp"
#include "cli/scoutctl.hpp"
#include "common/ids.hpp"
#include "common/spool_paths.hpp"
#include "common/untrusted_json.hpp"
#include "common/untrusted_text.hpp"
#include "common/json_num.hpp"
#include "ledgerd/client.hpp"
#include "ledgerd/views.hpp"
#include "ledgerd/site_config.hpp"
#include "common/options.hpp"
#include "libc3/rank_record.hpp"
#include "scoutd/wire/control_protocol.hpp"
#include "common/runtime_paths.hpp"
#include "sql/ledger.hpp"

using nlohmann::json;
namespace sd = scout::scoutd;
namespace sq = scout::sql;
namespace cli = scout::cli;
namespace ld = scout::ledgerd;

using namespace scout::cli;
// What the job's user wrote (a checkpoint path, a reason, a socket's name)
// reaches root's terminal escaped (control characters, C1, stray bytes as
// \xNN); --json output is dumped with ill-formed UTF-8 replaced.
using scout::common::dump_repairing_utf8;
using scout::common::escape_control;

namespace {

// The ledger holding a job: the site/local ledger, or under Slurm the job's
// spool ledger while the job runs. Dies with the documented exit codes.
sq::Ledger open_job_ledger(const Args& a) {
  std::string path = a.ledger.empty() ? scout::common::default_ledger_path() : a.ledger;
  std::string spool_db = a.spool.empty() ? "" : scout::common::spool_ledger(a.spool, a.job);
  auto in_site = [&] {
    try {
      auto l = sq::Ledger::open(path, sq::Ledger::Mode::kReadOnly);
      return l.job(a.job).has_value();
    } catch (const sq::LedgerError&) {
      return false;
    }
  };
  if (!spool_db.empty() && ::access(spool_db.c_str(), R_OK) == 0 && !in_site()) path = spool_db;
  try {
    auto l = sq::Ledger::open(path, sq::Ledger::Mode::kReadOnly);
    if (!l.job(a.job)) die(kExitUnknownJob, fmt::format("{}: job {} is not in the ledger {}", a.command, a.job, path));
    return l;
  } catch (const sq::LedgerError& e) {
    die(kExitLedger, fmt::format("{}: {}", a.command, e.what()));
  }
}

json checkpoint_json(const sq::CheckpointRow& c) {
  return {{"id", c.id}, {"job", c.job_id}, {"path", c.path}, {"written_at", sq::unix_ms_to_iso(c.written_ms)},
          {"seen_at", c.seen_at}, {"state", c.state}, {"reason", c.reason}, {"updated_at", c.updated_at}};
}

int cmd_checkpoints(const Args& a) {
  auto l = open_job_ledger(a);
  json out = json::array();
  for (auto& c : l.checkpoints(a.job)) out.push_back(checkpoint_json(c));
  if (a.json) {
    std::puts(dump_repairing_utf8(out, 2).c_str());
  } else if (out.empty()) {
    std::printf("job %s: no checkpoints seen\n", a.job.c_str());
  } else {
    std::printf("%-17s  %-24s  %s\n", "STATE", "WRITTEN", "PATH / REASON");
    for (auto& c : out)
      std::printf("%-17s  %-24s  %s\n%45s%s\n", escape_control(c["state"].get<std::string>()).c_str(),
                  escape_control(c["written_at"].get<std::string>()).c_str(),
                  escape_control(c["path"].get<std::string>()).c_str(), "",
                  escape_control(c["reason"].get<std::string>()).c_str());
  }
  return kExitOk;
}

int cmd_recovery(const Args& a) {
  auto l = open_job_ledger(a);
  auto cs = l.checkpoints(a.job);
  const sq::CheckpointRow* best = nullptr;
  int candidates = 0, rejected = 0;
  for (auto& c : cs) {
    if (c.state == "recovery_verified" && (!best || c.written_ms >= best->written_ms)) best = &c;
    candidates += c.state == "candidate";
    rejected += c.state == "rejected";
  }
  if (!best) {
    std::fprintf(stderr, "scoutctl: recovery: job %s has no recovery_verified checkpoint (%zu seen: %d "
                 "candidate, %d rejected); do not restart from an unverified one\n",
                 a.job.c_str(), cs.size(), candidates, rejected);
    return kExitInternal;
  }
  if (a.json) std::puts(dump_repairing_utf8(checkpoint_json(*best), 2).c_str());
  else std::puts(escape_control(best->path).c_str());  // a path with control characters is not one to restart from
  return kExitOk;
}

int cmd_query(const Args& a) {
  json out = json::array();
  // Live on a compute node: its spool. Elsewhere: the ledger service, then
  // the local site ledger.
  const std::string spool_db = a.spool.empty() ? "" : scout::common::spool_ledger(a.spool, a.job);
  std::optional<json> remote;
  if (spool_db.empty() || ::access(spool_db.c_str(), R_OK) != 0) remote = query_ledgerd(a);
  if (remote) {
    // The service's answer, read with the same codec (one form, whichever
    // ledger answers); what does not read as a verdict is said, not shown.
    for (auto& v : *remote) {
      std::string why;
      if (auto d = scout::common::verdict_from_json(v, &why)) out.push_back(scout::common::to_json(*d));
      else
        std::fprintf(stderr, "scoutctl: query: warning: scout-ledgerd sent a malformed verdict: %s\n",
                     escape_control(why).c_str());
    }
  } else {
    out = sq::verdicts_json(open_job_ledger(a).verdicts(a.job));
  }
  if (a.json) {
    std::puts(dump_repairing_utf8(out, 2).c_str());
  } else if (out.empty()) {
    std::printf("job %s: no verdicts\n", a.job.c_str());
  } else {
    std::fputs(sd::render_verdicts_text(out).c_str(), stdout);
    if (std::any_of(out.begin(), out.end(), [](auto& v) { return !v["resolved_at"].is_null(); }))
      std::puts("(* resolved: progress resumed)");
  }
  return kExitOk;
}

json fetch_status(const Args& a) {
  std::string dir;
  const auto sockets = job_sockets(a, dir);
  json merged = json::object();
  json ranks = json::array(), learners = json::array();
  int answered = 0;
  for (auto& path : sockets) {
    try {
      cli::ControlConnection c(path, 5, job_dir_owner(dir));
      c.request("SET FORMAT json");
      auto lines = c.request("STATUS");
      // A scoutd is the job's user's process: its reply is untrusted.
      std::string why;
      auto parsed = scout::common::parse_untrusted(lines.empty() ? "{}" : lines.front(), scout::common::kReplyLimits, &why);
      if (!parsed) throw std::runtime_error("status reply: " + why);
      json s = std::move(*parsed);
      if (!s.is_object()) throw std::runtime_error("status reply is not a JSON object");
      if (merged.empty()) merged = s;
      if (s.contains("ranks") && s["ranks"].is_array())
        for (auto& r : s["ranks"])
          if (r.is_object() && r.contains("rank") && r["rank"].is_number_integer()) ranks.push_back(r);
      if (s.contains("learn") && s["learn"].is_object()) {
        json l = s["learn"];
        l["node"] = s.contains("node") && s["node"].is_string() ? s["node"] : json("?");
        learners.push_back(l);
      }
      ++answered;
      c.quit();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "scoutctl: status: %s: %s\n", escape_control(path).c_str(),
                   escape_control(e.what()).c_str());
    }
  }
  if (answered == 0)
    die(kExitUnreachable, fmt::format("status: no scoutd of job {} answered ({} sockets in {})", a.job,
                                      sockets.size(), dir));
  std::sort(ranks.begin(), ranks.end(), [](auto& x, auto& y) { return x["rank"] < y["rank"]; });
  merged["ranks"] = ranks;
  merged["learners"] = learners;
  merged["node"] = fmt::format("{} of {} answered", answered, sockets.size());
  return merged;
}

int cmd_replay(const Args& a) {
  std::string dir;
  const auto sockets = job_sockets(a, dir);
  for (auto& path : sockets) {
    try {
      cli::ControlConnection c(path, 5, job_dir_owner(dir));
      c.request("REPLAY");
      c.quit();
      if (a.json) std::puts(dump_repairing_utf8(json{{"job", a.job}, {"replay", "requested"}, {"via", path}}).c_str());
      else std::printf("job %s: replay cycle requested\n", a.job.c_str());
      return kExitOk;
    } catch (const std::exception& e) {
      std::string msg = e.what();
      if (msg.rfind("ERROR:", 0) == 0) die(kExitUsage, fmt::format("replay: {}", msg.substr(7)));
      std::fprintf(stderr, "scoutctl: replay: %s: %s\n", escape_control(path).c_str(),
                   escape_control(e.what()).c_str());
    }
  }
  die(kExitUnreachable, fmt::format("replay: no scoutd of job {} answered ({} sockets in {})", a.job,
                                    sockets.size(), dir));
}

int cmd_status(const Args& a) {
  json merged = fetch_status(a);
  if (a.json) std::puts(dump_repairing_utf8(merged, 2).c_str());
  else std::fputs(sd::render_status_text(merged).c_str(), stdout);
  return kExitOk;
}

// Raw keyboard for `top`: restored on every exit path.
struct RawTerminal {
  termios saved{};
  bool active = false;
  RawTerminal() {
    if (!isatty(0) || tcgetattr(0, &saved) != 0) return;
    termios raw = saved;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active = tcsetattr(0, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active) tcsetattr(0, TCSANOW, &saved);
  }
};

int cmd_top(const Args& a) {
  RawTerminal term;
  const bool tty = isatty(1) && !a.json;
  for (long n = 0; a.count <= 0 || n < a.count; ++n) {
    json s = fetch_status(a);
    auto& ranks = s["ranks"];
    std::stable_sort(ranks.begin(), ranks.end(), [](auto& x, auto& y) {
      return x.value("score", 0.0) > y.value("score", 0.0);
    });
    if (a.json) {
      std::puts(dump_repairing_utf8(s).c_str());  // one JSON object per refresh
    } else {
      std::string text = sd::render_status_text(s);
      if (tty) {
        // Suspects (score at or above the relative threshold 1.2) in bold red.
        std::string out, line;
        std::istringstream is(text);
        std::size_t i = 0;
        while (std::getline(is, line)) {
          bool suspect = i >= 2 && i - 2 < ranks.size() && ranks[i - 2].value("score", 0.0) >= 1.2;
          out += suspect ? "\033[1;31m" + line + "\033[0m\n" : line + "\n";
          ++i;
        }
        std::printf("\033[H\033[2J%s\n(sorted by score; q to quit)\n", out.c_str());
      } else {
        std::printf("%s\n", text.c_str());
      }
    }
    std::fflush(stdout);
    if (a.count > 0 && n + 1 >= a.count) break;
    pollfd p{0, POLLIN, 0};
    if (term.active && poll(&p, 1, static_cast<int>(a.interval * 1000)) > 0) {
      char c = 0;
      if (::read(0, &c, 1) == 1 && (c == 'q' || c == 'Q')) break;
    } else if (!term.active) {
      std::this_thread::sleep_for(std::chrono::duration<double>(a.interval));
    }
  }
  return kExitOk;
}

}  // namespace

// The one table of scoutctl's options: parser and --help.
scout::opts::Table make_table(Args& a) {
  scout::opts::Table t(
      "scoutctl",
      "scoutctl COMMAND JOBID [OPTIONS]\n"
      "       scoutctl node NODE [OPTIONS]\n"
      "       scoutctl clear NODE --reason TEXT [OPTIONS]\n"
      "       scoutctl nodes [--json]\n"
      "       scoutctl ping [--json]",
      "Read scout verdicts and live state; review and clear a node's health.\n\n"
      "Commands:\n"
      "  query JOBID     verdicts of a job from the ledger (during and after the job)\n"
      "  status JOBID    live per-rank view from the job's scoutds: collective position,\n"
      "                  step time, compute/wait split and straggler score\n"
      "  stacks JOBID    where every rank is now: each scoutd takes its ranks' user-space\n"
      "                  stacks (ptrace, resumed untouched); printed as stack-trace\n"
      "                  classes (ranks with the same stack), untraceable ranks listed\n"
      "  set JOBID KEY=VALUE...  retune the running job: stall_threshold, straggler_factor,\n"
      "                  straggler_confirmations, replay_budget, outsig_period, learn\n"
      "                  (on|off); applied by the deciding observer at a round\n"
      "                  boundary, adopted by every scoutd, recorded in the ledger\n"
      "  top JOBID       status refreshed like top(1), ranks sorted by score, suspects\n"
      "                  highlighted; q quits (--count N, --interval S; --json: one\n"
      "                  JSON object per refresh)\n"
      "  replay JOBID    ask the job's scoutds for a replay cycle now (silent data\n"
      "                  corruption check on every device)\n"
      "  checkpoints JOBID  the job's checkpoints: path, time, trust state, reason\n"
      "  recovery JOBID  the newest recovery_verified checkpoint's path (exit 1 and a\n"
      "                  message when there is none), for restart scripts\n"
      "  node NODE       the node's open attributed verdicts (since its last clear) and\n"
      "                  its health decisions (drain, keep, refuse, clear)\n"
      "  clear NODE      after repair: record a clear decision (who, when, --reason),\n"
      "                  which closes the node's open verdicts so that scout-prolog\n"
      "                  accepts it again (writes the site ledger: root), and resume\n"
      "                  the node in Slurm if scout drained it (reason 'scout: ...')\n"
      "                  and no reboot is pending; another tool's drain is left as it\n"
      "                  is (--no-resume: record only)\n"
      "  nodes           every node with verdicts or decisions: open verdicts, verdicts and\n"
      "                  drains over 7 and 30 days, the last decision, and Slurm's state\n"
      "                  and reason in force with who set it (administrators)\n"
      "  ping            reach scout-ledgerd (MUNGE end to end) and say who you are to it\n\n"
      "Options:",
      "Exit status: 0 ok, 1 internal error (recovery: no verified checkpoint),\n"
      "2 usage or malformed job id,\n"
      "3 unknown job, 4 ledger missing/unreadable/not a scout ledger, 5 no scoutd answers.\n");
  t.text("ledger", "PATH", a.ledger,
         "ledger file (default $SCOUT_LEDGER, then\n${XDG_STATE_HOME:-~/.local/state}/scout/ledger.db)");
  t.text("runtime-dir", "DIR", a.runtime_dir,
         "runtime root holding <jobid>/ sockets (default\n$SCOUT_RUNTIME_DIR, $XDG_RUNTIME_DIR/scout, /tmp/scout-UID)");
  t.text("spool", "DIR", a.spool,
         "Slurm spool of per-job ledgers (default $SCOUT_SPOOL): a\nrunning job's verdicts are read there");
  t.text("reason", "TEXT", a.reason, "clear: why the node is healthy again (kept for audit)");
  t.integer("count", "N", a.count, 1, 1 << 30, "top: refreshes, then exit (default: until q)");
  t.seconds("interval", a.interval, 0.1, 3600, "top: seconds between refreshes");
  t.flag("no-resume", a.no_resume, "clear: record the clear only; leave the node drained");
  t.flag("json", a.json, "machine-readable output");
  return t;
}

int main(int argc, char** argv) {
  Args a;
  std::vector<std::string> pos;
  try {
    if (make_table(a).parse_mixed(argc, argv, pos) == scout::opts::Table::Outcome::kPrinted) return kExitOk;
  } catch (const scout::opts::ConfigError& e) {
    die(kExitUsage, e.what());
  }
  if (a.spool.empty())
    if (const char* e = std::getenv("SCOUT_SPOOL")) a.spool = e;
  if (pos.empty()) die(kExitUsage, "missing command; expected 'query JOBID' or 'status JOBID' (see scoutctl --help)");
  a.command = pos[0];
  static const char* kCommands[] = {"query", "status", "stacks", "set", "top", "replay", "checkpoints", "recovery", "node", "clear",
                                    "ping", "nodes"};
  if (std::none_of(std::begin(kCommands), std::end(kCommands), [&](const char* c) { return a.command == c; }))
    die(kExitUsage, fmt::format("unknown command '{}'; expected query, status, stacks, set, top, replay, checkpoints, "
                                "recovery, node, nodes, clear or ping", a.command));
  if (a.command == "ping" || a.command == "nodes") {
    if (pos.size() != 1) die(kExitUsage, fmt::format("{}: takes no argument", a.command));
    try {
      return a.command == "ping" ? cmd_ping(a) : cmd_nodes(a);
    } catch (const std::exception& e) {
      die(kExitInternal, fmt::format("{}: {}", a.command, e.what()));
    }
  }
  if (a.command == "node" || a.command == "clear") {
    if (pos.size() != 2) die(kExitUsage, fmt::format("{}: expected exactly one NODE", a.command));
    a.node = pos[1];
    if (a.node.empty() || a.node.size() > 64 ||
        a.node.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
            std::string::npos)
      die(kExitUsage, fmt::format("{}: '{}' is not a node name; expected letters, digits, '.', '_' or '-'",
                                  a.command, a.node));
    try {
      return a.command == "node" ? cmd_node(a) : cmd_clear(a);
    } catch (const std::exception& e) {
      die(kExitInternal, fmt::format("{}: {}", a.command, e.what()));
    }
  }
  std::vector<std::string> set_args;
  if (a.command == "set" && pos.size() > 2) set_args.assign(pos.begin() + 2, pos.end());
  else if (pos.size() != 2) die(kExitUsage, fmt::format("{}: expected exactly one JOBID", a.command));
  a.job = pos[1];
  if (!scout::common::valid_job_id(a.job))
    die(kExitUsage, fmt::format("{}: '{}' is not a job id; expected a decimal number like 1000001", a.command, a.job));
  try {
    if (a.command == "query") return cmd_query(a);
    if (a.command == "top") return cmd_top(a);
    if (a.command == "replay") return cmd_replay(a);
    if (a.command == "stacks") return cmd_stacks(a);
    if (a.command == "set") return cmd_set(a, set_args);
    if (a.command == "checkpoints") return cmd_checkpoints(a);
    if (a.command == "recovery") return cmd_recovery(a);
    return cmd_status(a);
  } catch (const std::exception& e) {
    die(kExitInternal, fmt::format("{}: {}", a.command, e.what()));
  }
}
