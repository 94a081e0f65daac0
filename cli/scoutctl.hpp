// scoutctl's shared pieces: its arguments, exit codes and fatal error, for
// the command files (scoutctl_main.cpp: local ledgers and scoutds;
// scoutctl_ledgerd.cpp: the site ledger service; scoutctl_site.cpp: nodes).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::cli {

constexpr int kExitOk = 0, kExitInternal = 1, kExitUsage = 2, kExitUnknownJob = 3,
              kExitLedger = 4, kExitUnreachable = 5;

struct Args {
  std::string command, job, ledger, runtime_dir, spool, reason;
  std::string node;  // node and clear
  bool json = false;
  bool no_resume = false;  // clear: record only, leave the node's Slurm state
  int count = 0;         // top: refreshes (0 = until q)
  double interval = 1;   // top: seconds between refreshes
};

[[noreturn]] void die(int code, const std::string& msg);


// The job's verdicts from scout-ledgerd; nullopt when none is configured,
// it cannot be reached (a warning), or it does not know the job.
std::optional<nlohmann::json> query_ledgerd(const Args& a);
// A node or clear request to scout-ledgerd when the site has one and no
// --ledger names a file; dies on a refusal or when it cannot be reached.
std::optional<nlohmann::json> ask_ledgerd(const Args& a, const nlohmann::json& req);
int cmd_ping(const Args& a);
// scoutctl_site.cpp: a node's open verdicts and decisions, every node at a
// glance, an administrator's clear.
int cmd_node(const Args& a);
int cmd_nodes(const Args& a);
int cmd_clear(const Args& a);
// scoutctl_live.cpp: a live job's scoutds (control sockets).
long job_dir_owner(const std::string& dir);
std::vector<std::string> job_sockets(const Args& a, std::string& dir);
int cmd_stacks(const Args& a);
int cmd_set(const Args& a, const std::vector<std::string>& assignments);

}  // namespace scout::cli
