// The shared settings (common/settings.hpp): every program that takes one
// takes its default and its range from the one table, and no parser of one
// is written anywhere else.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/settings.hpp"
#include "scoutd/daemon/config.hpp"
#include "scoutd/detect/progress_detector.hpp"
#include "spank/plugin_config.hpp"

using namespace scout;
namespace fs = std::filesystem;

namespace {
scoutd::ScoutdConfig scoutd_parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  std::string prog = "scoutd";
  argv.push_back(prog.data());
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  scoutd::ScoutdConfig c;
  scoutd::parse_scoutd_args(static_cast<int>(argv.size() - 1), argv.data(), c);
  return c;
}
std::string txt(double d) { return fmt::format("{}", d); }
}  // namespace

TEST_CASE("shared settings: the plugstack line and scoutd take each one's default and range from the table") {
  for (const auto* s : common::kNumericSettings) {
    const std::string key(s->key), flag(s->flag), expected = common::expected_text(*s);
    CAPTURE(key);
    const double below = s->above_min ? s->min : s->min - (s->min > 0 ? s->min / 2 : 1);
    const double above = s->max * 2 + 1;
    CHECK(common::parse_setting(*s, txt(s->def)));
    CHECK_FALSE(common::parse_setting(*s, txt(below)));
    CHECK_FALSE(common::parse_setting(*s, txt(above)));
    CHECK_FALSE(common::parse_setting(*s, "ten"));
    if (s->homes & common::kPlugstack) {
      spank::PluginConfig c;
      CHECK(spank::parse_plugin_args({key + "=" + txt(s->def)}, c).empty());
      CHECK(spank::parse_plugin_args({key + "=" + txt(below)}, c).find("expected " + expected) != std::string::npos);
      CHECK(spank::parse_plugin_args({key + "=" + txt(above)}, c).find("expected " + expected) != std::string::npos);
    } else {
      spank::PluginConfig c;
      CHECK(spank::parse_plugin_args({key + "=" + txt(s->def)}, c).find("unknown key") != std::string::npos);
    }
    if (s->homes & common::kScoutd) {
      CHECK_NOTHROW(scoutd_parse({"--" + flag, txt(s->def)}));
      CHECK_THROWS_AS(scoutd_parse({"--" + flag, txt(below)}), opts::ConfigError);
      CHECK_THROWS_AS(scoutd_parse({"--" + flag, txt(above)}), opts::ConfigError);
      const auto shown = scoutd::print_config(scoutd::ScoutdConfig{});
      CHECK_MESSAGE(shown.find(key + " = " + txt(s->def) + "\n") != std::string::npos, shown);
    }
  }
  for (const auto* s : common::kSwitchSettings) {
    const std::string key(s->key);
    CAPTURE(key);
    spank::PluginConfig c;
    CHECK(spank::parse_plugin_args({key + "=" + (s->def ? "off" : "on")}, c).empty());
    CHECK(spank::parse_plugin_args({key + "=maybe"}, c).find("expected on or off") != std::string::npos);
    CHECK_THROWS_AS(scoutd_parse({"--" + std::string(s->flag), "maybe"}), opts::ConfigError);
    CHECK(scoutd::print_config(scoutd::ScoutdConfig{}).find(key + " = " + (s->def ? "on" : "off") + "\n") !=
          std::string::npos);
  }
  // The defaults in the structs the parsers fill are the table's.
  const spank::PluginConfig p;
  const scoutd::ScoutdConfig d;
  CHECK(p.stall_threshold == common::kStallThreshold.def);
  CHECK(d.stall_threshold_s == common::kStallThreshold.def);
  CHECK(scoutd::DetectorOptions{}.stall_threshold_s == common::kStallThreshold.def);
  CHECK(p.replay_interval == d.replay_interval_s);
  CHECK(p.replay_budget == d.replay_budget);
  CHECK(p.replay == d.replay);
  CHECK(p.learn == d.learn);
}

TEST_CASE("shared settings: no parser of one is written outside the table") {
  const char* src = std::getenv("top_srcdir");
  const fs::path top = src ? fs::path(src) : fs::path("..");
  // A hand-written parser names the key or the flag next to a parse call.
  const char* parse_calls[] = {".seconds(\"", ".number(\"", ".on_off(\"", "k == \"", "parse_secs("};
  int scanned = 0;
  for (auto it = fs::recursive_directory_iterator(top); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.empty() || name[0] == '.' || fs::exists(it->path() / "config.status"))) {
      it.disable_recursion_pending();
      continue;
    }
    const auto ext = it->path().extension();
    if (!it->is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
    const std::string rel = fs::relative(it->path(), top).string();
    if (rel.rfind("common/settings", 0) == 0 || rel.rfind("tests/", 0) == 0) continue;
    std::ifstream in(it->path());
    ++scanned;
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      for (const auto* s : common::kNumericSettings)
        for (const char* call : parse_calls)
          for (const std::string& name : {std::string(s->key), std::string(s->flag)})
            if (line.find(std::string(call) + name + "\"") != std::string::npos)
              FAIL_CHECK(rel << ":" << n << " parses the shared setting " << name
                             << " by hand; use common/settings.hpp");
      for (const auto* s : common::kSwitchSettings)
        for (const char* call : parse_calls)
          if (line.find(std::string(call) + std::string(s->key) + "\"") != std::string::npos)
            FAIL_CHECK(rel << ":" << n << " parses the shared setting " << s->key
                           << " by hand; use common/settings.hpp");
    }
  }
  CHECK(scanned > 100);
}

TEST_CASE("shared settings: the man pages take their entries from the table") {
  const char* src = std::getenv("top_srcdir");
  const fs::path man = (src ? fs::path(src) : fs::path("..")) / "man";
  int pages = 0;
  for (auto& e : fs::directory_iterator(man)) {
    if (e.path().extension() != ".in") continue;
    ++pages;
    std::ifstream in(e.path());
    std::string prev, line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (prev == ".TP") {  // an entry: the line after .TP names what it documents
        auto by_hand = [&](std::string_view key, std::string_view flag) {
          std::string esc;
          for (char c : flag) esc += c == '-' ? std::string("\\-") : std::string(1, c);
          const std::string k = std::string(key) + "=";
          return line.find("\\-\\-" + esc + " ") != std::string::npos ||
                 (line.find("\\-\\-" + esc) != std::string::npos &&
                  line.size() == line.find("\\-\\-" + esc) + 4 + esc.size()) ||
                 line.rfind(".BI " + k, 0) == 0 || line.rfind(".BR " + k, 0) == 0 || line.rfind(".B " + k, 0) == 0;
        };
        for (const auto* s : common::kNumericSettings)
          if (by_hand(s->key, s->flag))
            FAIL_CHECK(e.path().filename().string() << ":" << n << " documents " << s->key
                                                    << " by hand; put @SETTINGS_...@ there (common/settings_man.cpp)");
        for (const auto* s : common::kSwitchSettings)
          if (by_hand(s->key, s->flag))
            FAIL_CHECK(e.path().filename().string() << ":" << n << " documents " << s->key
                                                    << " by hand; put @SETTINGS_...@ there (common/settings_man.cpp)");
      }
      prev = line;
    }
  }
  CHECK(pages >= 5);
}
