// One table of options per program: each entry names the option, its value,
// its help line, its config key and where the value goes. From the table come
// the parser (strict: a bad value is an error naming the option and what was
// expected), --help (with each default read from the target before parsing)
// and --print-config. The man-page test (tests/integration/00_man_options.sh)
// checks that every option --help lists is in the program's man page.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/settings.hpp"

namespace scout::opts {

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Strict value parsers; `what` names the option in the error.
double parse_seconds(const std::string& what, const std::string& value, double min, double max);
// A plain number (a fraction, a factor): `unit` says what it is in errors.
double parse_number(const std::string& what, const std::string& value, double min, double max,
                    const std::string& unit);
int parse_int(const std::string& what, const std::string& value, int min, int max);
// "0,2-3" -> {0,2,3}
std::vector<int> parse_cpu_list(const std::string& what, const std::string& value);
bool parse_on_off(const std::string& what, const std::string& value);

struct Option {
  std::string name;     // long name without "--"
  char short_name = 0;  // e.g. 'n' for -n; 0 for none
  std::string metavar;  // "S", "PATH"; empty for a flag
  std::string help;     // may hold '\n' for more lines
  std::string key;      // --print-config key; empty: not printed
  std::function<void(const std::string& value)> set;  // parses and stores; throws ConfigError
  std::function<std::string()> show;                  // the current value, for defaults and print-config
  bool repeatable = false;
};

class Table {
 public:
  Table(std::string program, std::string usage, std::string description, std::string epilogue = {});

  Table& add(Option o);
  Table& flag(const std::string& name, bool& target, const std::string& help, const std::string& key = {});
  Table& on_off(const std::string& name, bool& target, const std::string& help, const std::string& key = {});
  Table& text(const std::string& name, const std::string& metavar, std::string& target, const std::string& help,
              const std::string& key = {});
  Table& seconds(const std::string& name, double& target, double min, double max, const std::string& help,
                 const std::string& key = {});
  Table& number(const std::string& name, const std::string& metavar, double& target, double min, double max,
                const std::string& unit, const std::string& help, const std::string& key = {});
  Table& integer(const std::string& name, const std::string& metavar, int& target, int min, int max,
                 const std::string& help, const std::string& key = {});
  // A setting of the shared table (common/settings.hpp): its flag, help,
  // range and --print-config key.
  Table& setting(const common::NumericSetting& s, double& target);
  Table& setting(const common::SwitchSetting& s, bool& target);

  enum class Outcome { kRun, kPrinted };  // kPrinted: --help or --version was printed
  // Parses argv[1..]: long options as --name VALUE or --name=VALUE, short
  // ones as -n VALUE. Stops at "--" or, when `stop_at_positional`, at the
  // first argument not starting with '-'; *next is where it stopped.
  // Otherwise a positional argument is an error.
  Outcome parse(int argc, char** argv, bool stop_at_positional = false, int* next = nullptr);
  // Options and positional arguments in any order (a command line like
  // "scoutctl query 17 --json"): the positionals are appended to `pos`.
  Outcome parse_mixed(int argc, char** argv, std::vector<std::string>& pos);

  std::string help() const;
  std::string print_config() const;
  const std::vector<Option>& options() const { return options_; }

 private:
  Outcome parse_impl(int argc, char** argv, bool stop_at_positional, int* next, std::vector<std::string>* pos);
  const Option* find_long(const std::string& name) const;
  const Option* find_short(char c) const;
  std::string program_, usage_, description_, epilogue_;
  std::vector<Option> options_;
  std::vector<std::string> defaults_;  // show() when the option was added
};

}  // namespace scout::opts
