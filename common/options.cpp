// Option tables (see options.hpp).
#include "common/options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace scout::opts {

double parse_seconds(const std::string& what, const std::string& value, double min, double max) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end == value.c_str() || *end != '\0' || errno != 0 || !std::isfinite(v))
    throw ConfigError(fmt::format("{}: '{}' is not a number; expected seconds, e.g. 10 or 2.5", what, value));
  if (v < min || v > max)
    throw ConfigError(fmt::format("{}: {} is out of range; expected {} to {} seconds", what, value, min, max));
  return v;
}

double parse_number(const std::string& what, const std::string& value, double min, double max,
                    const std::string& unit) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end == value.c_str() || *end != '\0' || errno != 0 || !std::isfinite(v))
    throw ConfigError(fmt::format("{}: '{}' is not a number; expected {} from {} to {}", what, value, unit, min, max));
  if (v < min || v > max)
    throw ConfigError(fmt::format("{}: {} is out of range; expected {} from {} to {}", what, value, unit, min, max));
  return v;
}

int parse_int(const std::string& what, const std::string& value, int min, int max) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || end == value.c_str() || *end != '\0' || errno != 0)
    throw ConfigError(fmt::format("{}: '{}' is not an integer; expected {} to {}", what, value, min, max));
  if (v < min || v > max)
    throw ConfigError(fmt::format("{}: {} is out of range; expected {} to {}", what, value, min, max));
  return static_cast<int>(v);
}

std::vector<int> parse_cpu_list(const std::string& what, const std::string& value) {
  std::vector<int> out;
  std::size_t p = 0;
  while (p <= value.size()) {
    auto e = value.find(',', p);
    std::string item = value.substr(p, e == std::string::npos ? std::string::npos : e - p);
    p = e == std::string::npos ? value.size() + 1 : e + 1;
    auto dash = item.find('-');
    try {
      if (dash == std::string::npos) {
        out.push_back(parse_int(what, item, 0, 4095));
      } else {
        int a = parse_int(what, item.substr(0, dash), 0, 4095), b = parse_int(what, item.substr(dash + 1), 0, 4095);
        if (a > b) throw ConfigError("");
        for (int i = a; i <= b; ++i) out.push_back(i);
      }
    } catch (const ConfigError&) {
      throw ConfigError(fmt::format("{}: '{}' is not a CPU list; expected e.g. 0,2-3", what, value));
    }
  }
  return out;
}

bool parse_on_off(const std::string& what, const std::string& value) {
  if (value == "on") return true;
  if (value == "off") return false;
  throw ConfigError(fmt::format("{}: '{}'; expected on or off", what, value));
}

namespace {
std::string num(double v) { return fmt::format("{}", v); }
}  // namespace

Table::Table(std::string program, std::string usage, std::string description, std::string epilogue)
    : program_(std::move(program)), usage_(std::move(usage)), description_(std::move(description)),
      epilogue_(std::move(epilogue)) {}

Table& Table::add(Option o) {
  defaults_.push_back(o.show ? o.show() : std::string());
  options_.push_back(std::move(o));
  return *this;
}

Table& Table::flag(const std::string& name, bool& target, const std::string& help, const std::string& key) {
  return add({name, 0, "", help, key, [&target](const std::string&) { target = true; },
              [&target] { return std::string(target ? "yes" : "no"); }});
}

Table& Table::on_off(const std::string& name, bool& target, const std::string& help, const std::string& key) {
  return add({name, 0, "on|off", help, key,
              [&target, name](const std::string& v) { target = parse_on_off("--" + name, v); },
              [&target] { return std::string(target ? "on" : "off"); }});
}

Table& Table::text(const std::string& name, const std::string& metavar, std::string& target,
                   const std::string& help, const std::string& key) {
  return add({name, 0, metavar, help, key, [&target](const std::string& v) { target = v; },
              [&target] { return target; }});
}

Table& Table::seconds(const std::string& name, double& target, double min, double max, const std::string& help,
                      const std::string& key) {
  return add({name, 0, "S", help, key,
              [&target, name, min, max](const std::string& v) { target = parse_seconds("--" + name, v, min, max); },
              [&target] { return num(target); }});
}

Table& Table::setting(const common::NumericSetting& s, double& target) {
  const std::string name(s.flag), help(s.help), key(s.key), unit(s.unit);
  if (unit == "seconds" && !s.above_min) return seconds(name, target, s.min, s.max, help, key);
  return add({name, 0, "X", help, key,
              [&target, name, unit, s](const std::string& v) {
                const double d = parse_number("--" + name, v, s.min, s.max, unit);
                if (s.above_min && d <= s.min)
                  throw ConfigError(fmt::format("--{}: {}; expected {}", name, v, common::expected_text(s)) +
                                    (name == "replay-budget" ? " (use --replay off)" : ""));
                target = d;
              },
              [&target] { return num(target); }});
}

Table& Table::setting(const common::SwitchSetting& s, bool& target) {
  return on_off(std::string(s.flag), target, std::string(s.help), std::string(s.key));
}

Table& Table::number(const std::string& name, const std::string& metavar, double& target, double min, double max,
                     const std::string& unit, const std::string& help, const std::string& key) {
  return add({name, 0, metavar, help, key,
              [&target, name, min, max, unit](const std::string& v) {
                target = parse_number("--" + name, v, min, max, unit);
              },
              [&target] { return num(target); }});
}

Table& Table::integer(const std::string& name, const std::string& metavar, int& target, int min, int max,
                      const std::string& help, const std::string& key) {
  return add({name, 0, metavar, help, key,
              [&target, name, min, max](const std::string& v) { target = parse_int("--" + name, v, min, max); },
              [&target] { return std::to_string(target); }});
}

const Option* Table::find_long(const std::string& name) const {
  for (auto& o : options_)
    if (o.name == name) return &o;
  return nullptr;
}

const Option* Table::find_short(char c) const {
  for (auto& o : options_)
    if (o.short_name && o.short_name == c) return &o;
  return nullptr;
}

Table::Outcome Table::parse(int argc, char** argv, bool stop_at_positional, int* next) {
  return parse_impl(argc, argv, stop_at_positional, next, nullptr);
}

Table::Outcome Table::parse_mixed(int argc, char** argv, std::vector<std::string>& pos) {
  return parse_impl(argc, argv, false, nullptr, &pos);
}

Table::Outcome Table::parse_impl(int argc, char** argv, bool stop_at_positional, int* next,
                                 std::vector<std::string>* pos) {
  int i = 1;
  for (; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--") {
      ++i;
      break;
    }
    if (s == "-h" || s == "--help") {
      std::fputs(help().c_str(), stdout);
      return Outcome::kPrinted;
    }
    if (s == "-V" || s == "--version") {
      std::printf("%s (scout) %s\n", program_.c_str(), PACKAGE_VERSION);
      return Outcome::kPrinted;
    }
    if (s.size() < 2 || s[0] != '-') {
      if (pos) {
        pos->push_back(s);
        continue;
      }
      if (stop_at_positional) break;
      throw ConfigError(fmt::format("unexpected argument '{}' (see {} --help)", s, program_));
    }
    const Option* o = nullptr;
    std::string shown = s, value;
    bool has_value = false;
    if (s.rfind("--", 0) == 0) {
      std::string name = s.substr(2);
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
        shown = "--" + name;
      }
      o = find_long(name);
    } else if (s.size() == 2) {
      o = find_short(s[1]);
    }
    if (!o) throw ConfigError(fmt::format("unknown option '{}' (see {} --help)", shown, program_));
    if (o->metavar.empty()) {
      if (has_value) throw ConfigError(fmt::format("{}: takes no value", shown));
    } else if (!has_value) {
      if (i + 1 >= argc)
        throw ConfigError(fmt::format("{}: missing value; expected {}", shown, o->metavar));
      value = argv[++i];
    }
    o->set(value);
  }
  if (pos)
    for (; i < argc; ++i) pos->emplace_back(argv[i]);  // after "--"
  if (next) *next = i;
  return Outcome::kRun;
}

std::string Table::help() const {
  std::string out = fmt::format("Usage: {}\n{}\n\n", usage_, description_);
  for (std::size_t k = 0; k < options_.size(); ++k) {
    const auto& o = options_[k];
    std::string head = o.short_name ? fmt::format("  -{}, --{}", o.short_name, o.name) : fmt::format("  --{}", o.name);
    if (!o.metavar.empty()) head += " " + o.metavar;
    std::string text = o.help;
    const std::string& d = defaults_[k];
    const bool show_default = !o.metavar.empty() && !d.empty() && text.find("(default") == std::string::npos &&
                              text.find("(required)") == std::string::npos;
    if (show_default) text += fmt::format(" (default {})", d);
    std::size_t p = 0;
    bool first = true;
    while (p <= text.size()) {
      auto e = text.find('\n', p);
      std::string line = text.substr(p, e == std::string::npos ? std::string::npos : e - p);
      if (first) {
        if (head.size() < 27) out += fmt::format("{:<27}{}\n", head, line);
        else out += fmt::format("{}\n{:<27}{}\n", head, "", line);
        first = false;
      } else {
        out += fmt::format("{:<27}{}\n", "", line);
      }
      if (e == std::string::npos) break;
      p = e + 1;
    }
  }
  out += fmt::format("{:<27}{}\n", "  -h, --help", "this help");
  out += fmt::format("{:<27}{}\n", "  -V, --version", "the version");
  if (!epilogue_.empty()) out += "\n" + epilogue_;
  return out;
}

std::string Table::print_config() const {
  std::string out;
  for (auto& o : options_)
    if (!o.key.empty() && o.show) {
      std::string v = o.show();
      out += fmt::format("{} = {}\n", o.key, v.empty() ? "-" : v);
    }
  return out;
}

}  // namespace scout::opts
