// The one table of the settings that more than one program takes: name,
// default, range, unit, help, and where each can be set. The plugstack
// parser (spank/plugin_config.cpp), the srun option (spank/scout_dispatch),
// scoutd's and scout-run's option tables (--help, --print-config) and the
// detectors' defaults all read them from here; tests/unit/test_settings.cpp
// checks that every parser accepts and refuses the same values.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace scout::common {

// Where a setting can be set.
enum SettingHome : unsigned {
  kPlugstack = 1u,   // a key of the scout.so line in plugstack.conf
  kSrunOption = 2u,  // srun/sbatch --scout-<flag>
  kScoutd = 4u,      // scoutd --<flag>
  kScoutRun = 8u,    // scout-run --<flag>
};

struct NumericSetting {
  std::string_view key;   // plugstack key and --print-config name
  std::string_view flag;  // command-line option, without "--"
  std::string_view unit;  // "seconds", "a fraction of the node's CPU time"
  double def, min, max;
  bool above_min;         // the minimum itself is refused (a budget of 0)
  std::string_view help;
  unsigned homes;
};

struct SwitchSetting {  // on or off
  std::string_view key, flag;
  bool def;
  std::string_view help;
  unsigned homes;
};

inline constexpr NumericSetting kStallThreshold{
    "stall_threshold", "stall-threshold", "seconds", 10, 1, 86400, false,
    "seconds without progress before a hang (min 1)", kPlugstack | kSrunOption | kScoutd | kScoutRun};
inline constexpr NumericSetting kRoundPeriod{"round_period", "round-period", "seconds", 0.5, 0.01, 60, false,
                                             "consensus round period", kScoutd | kScoutRun};
inline constexpr NumericSetting kRoundTimeout{"round_timeout", "round-timeout", "seconds", 1, 0.05, 60, false,
                                              "deadline per tree level in a round", kScoutd | kScoutRun};
inline constexpr NumericSetting kReplayInterval{
    "replay_interval", "replay-interval", "seconds", 600, 0, 7 * 86400, false,
    "seconds between replay cycles (0: only on demand:\nscoutctl replay, a confirmed compute straggler)",
    kPlugstack | kScoutd};
inline constexpr NumericSetting kReplayBudget{"replay_budget", "replay-budget", "a fraction of the node's CPU time",
                                              0.01, 0, 1, true, "CPU budget: fraction of the node's CPU time",
                                              kPlugstack | kScoutd};
// Plugstack keys only (the plugin and the epilog read the same line).
inline constexpr NumericSetting kGrace{"grace", "grace", "seconds", 20, 1, 600, false,
                                       "seconds the scoutds have to stop after the job (step) ends",
                                       kPlugstack | kScoutRun};
inline constexpr NumericSetting kCompanionWait{
    "companion_wait", "companion-wait", "seconds", 0, 0, 600, false,
    "hold each watched step until every scoutd of its companion is up (each says \"scoutd ready\" on its "
    "standard output, which srun relays to the plugin), so scout sees the step from its first collective and "
    "the two MPI jobs do not initialise at the same moment; a companion that does not come up in time is "
    "started once more (0: do not wait)",
    kPlugstack};
inline constexpr NumericSetting kDstateWait{"dstate_wait", "dstate-wait", "seconds", 2, 0, 60, false,
                                            "seconds between the two samples of root's D-state check in the epilog",
                                            kPlugstack};
inline constexpr NumericSetting kBlameWindow{"blame_window", "blame-window", "days", 7, 0.01, 365, false,
                                             "days in which blame from other jobs and users counts (see "
                                             "blame_jobs)",
                                             kPlugstack};
inline constexpr const NumericSetting* kNumericSettings[] = {
    &kStallThreshold, &kRoundPeriod, &kRoundTimeout, &kReplayInterval, &kReplayBudget,
    &kGrace,          &kCompanionWait, &kDstateWait, &kBlameWindow};

inline constexpr SwitchSetting kReplay{"replay", "replay", true, "replay cycles for silent data corruption",
                                       kPlugstack | kScoutd};
inline constexpr SwitchSetting kLearn{"learn", "learn", true, "federated telemetry outlier detection",
                                      kPlugstack | kScoutd};
inline constexpr SwitchSetting kStacks{"stacks", "stacks", true,
                                       "take the stacks of ranks stalled for half the stall threshold (scout-stack,\n"
                                       "ptrace as the job's user) for the hang evidence",
                                       kPlugstack | kScoutd};
inline constexpr const SwitchSetting* kSwitchSettings[] = {&kReplay, &kLearn, &kStacks};

// "seconds from 1 to 86400"; "a fraction of the node's CPU time above 0 and at most 1".
std::string expected_text(const NumericSetting& s);
// The value, or nullopt with `why` ("expected seconds from 1 to 86400").
std::optional<double> parse_setting(const NumericSetting& s, const std::string& value, std::string* why = nullptr);
std::optional<bool> parse_switch(const std::string& value);  // on or off
const NumericSetting* find_numeric(std::string_view key);
const SwitchSetting* find_switch(std::string_view key);

}  // namespace scout::common
