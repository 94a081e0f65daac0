// scout's site configuration for Slurm: the arguments of the scout.so line
// in plugstack.conf (key=value), shared by the SPANK plugin and scout-epilog.
// Defaults first, then the arguments; an unknown key or a bad value is an
// error that names the key and what was expected.
#pragma once

#include <string>
#include <vector>

#include "common/settings.hpp"
#include "libc3/verdict_kind.hpp"

namespace scout::spank {

struct PluginConfig {
  std::string scoutd = SCOUT_SBINDIR "/scoutd";
  std::string probe = SCOUT_LIBDIR "/libscout_probe.so";
  // The NCCL probe, preloaded beside the MPI one when it is installed (each
  // stays inert until its library is initialised); "none": never.
  std::string nccl_probe = SCOUT_LIBDIR "/libscout_nccl.so";
  std::string srun = "srun";
  std::string scontrol = "scontrol";
  std::string spool = "/var/spool/scout";         // per-job ledgers, written by scoutd as the user
  std::string ledger = "/var/lib/scout/ledger.db";  // site ledger, written by root (epilog)
  // Per-job control sockets: root's, 0755 (made so when missing) or sticky;
  // each job's directory is made there by root (common/runtime_paths.hpp).
  std::string runtime_dir = "/run/scout";
  bool default_on = false;
  bool required = false;        // if scoutd cannot start, fail the step
  double stall_threshold = common::kStallThreshold.def;  // seconds
  double grace = common::kGrace.def;  // seconds for the companion to stop
  double companion_wait = common::kCompanionWait.def;  // seconds to hold the step until every scoutd is up
  bool gate = true;             // epilog drains culprit nodes
  std::vector<std::string> drain_kinds = c3::default_drain_kinds();  // libc3/verdict_kind.cpp
  std::vector<std::string> prolog_kinds = {"sdc"};  // open verdicts that refuse a node at job start
  bool fail_closed = false;     // epilog exits non-zero on its own errors
  // Gating by verified evidence: a stall/crash/hang/divergence verdict makes
  // a node suspect; it is drained when root's node check fails or when at
  // least blame_jobs jobs of blame_users users blamed it in blame_window days.
  int blame_jobs = 3;
  int blame_users = 2;
  double blame_window_days = common::kBlameWindow.def;
  bool node_check = true;       // root's own node check before deciding
  double dstate_wait = common::kDstateWait.def;  // seconds between the two D-state samples
  bool learn = common::kLearn.def;  // federated telemetry outlier detection
  bool stacks = common::kStacks.def;  // stacks of stalled ranks for hang evidence
  std::string learn_aggregation;  // scoutd --learn-aggregation; empty: scoutd's default
  bool replay = common::kReplay.def;                        // replay cycles for silent data corruption
  double replay_interval = common::kReplayInterval.def;     // seconds between cycles (0: on demand only)
  double replay_budget = common::kReplayBudget.def;         // fraction of a node's CPU time
};

// Parses plugstack arguments ("key=value"). Returns an empty string on
// success, else the error message.
std::string parse_plugin_args(const std::vector<std::string>& args, PluginConfig& cfg);

// Reads the scout.so line of a plugstack file (or a plugstack.conf.d file)
// and returns its arguments; empty string on success, else an error.
std::string read_plugstack_args(const std::string& path, std::vector<std::string>& args);

// Strict on/off parsing for --scout: "on", "off"; "(null)" (value-less) is
// "on". Returns false for anything else.
bool parse_on_off(const std::string& v, bool& out);

}  // namespace scout::spank
