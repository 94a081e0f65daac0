// scout's logging (see log.hpp).
#include "common/log.hpp"

#include <syslog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include "common/untrusted_text.hpp"

namespace scout::log {

namespace {
std::string g_program = "scout";
Sinks g_sinks;
Level g_level = Level::kInfo;
std::mutex g_mu;

std::string stamp() {
  const auto now = std::chrono::system_clock::now();
  const auto secs = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms));
}
}  // namespace

const char* to_string(Level l) {
  switch (l) {
    case Level::kError: return "error";
    case Level::kWarning: return "warning";
    case Level::kInfo: return "info";
    case Level::kDebug: return "debug";
  }
  return "?";
}

bool level_from(const std::string& name, Level& out) {
  if (name == "error") out = Level::kError;
  else if (name == "warning" || name == "warn") out = Level::kWarning;
  else if (name == "info") out = Level::kInfo;
  else if (name == "debug") out = Level::kDebug;
  else return false;
  return true;
}

void init(const std::string& program, Sinks sinks) {
  std::lock_guard lk(g_mu);
  g_program = program;
  g_sinks = sinks;
  if (const char* v = std::getenv("SCOUT_LOG_LEVEL"); v && *v) {
    Level l;
    if (level_from(v, l)) g_level = l;
    else
      std::fprintf(stderr, "%s: ignoring SCOUT_LOG_LEVEL='%s'; expected error, warning, info or debug\n",
                   program.c_str(), v);
  }
  if (sinks.syslog) openlog(g_program.c_str(), LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

const std::string& program() { return g_program; }

bool enabled(Level l) { return static_cast<int>(l) <= static_cast<int>(g_level); }

void write(Level l, const std::string& raw) {
  if (!enabled(l)) return;
  // One message, one line: a message may quote someone's text (a job name,
  // a reason), and a newline or an escape sequence in it must neither forge
  // another line nor drive the terminal that reads the log. Call sites
  // quote and bound such text (common::quoted); this is the floor.
  const std::string msg = common::escape_control(raw);
  std::lock_guard lk(g_mu);
  if (g_sinks.stderr_stamped)
    std::fprintf(stderr, "%s %-7s %s: %s\n", stamp().c_str(), to_string(l), g_program.c_str(), msg.c_str());
  else if (g_sinks.stderr_plain)
    std::fprintf(stderr, "%s: %s%s\n", g_program.c_str(), l == Level::kWarning ? "warning: " : "", msg.c_str());
  if (g_sinks.syslog) {
    const int prio = l == Level::kError ? LOG_ERR : l == Level::kWarning ? LOG_WARNING
                     : l == Level::kInfo ? LOG_INFO : LOG_DEBUG;
    syslog(prio, "%s", msg.c_str());
  }
}

}  // namespace scout::log
