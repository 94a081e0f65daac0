// One way to log for every scout program. Interactive programs (scoutctl,
// scout-run) write "program: message" to stderr; the daemon writes
// "<UTC time> <level> program: message" to stderr (its per-job log file) and,
// under Slurm, also to syslog; the root epilog and prolog write to syslog and
// stderr. SCOUT_LOG_LEVEL=error|warning|info|debug filters (default info).
// Not for the probe: it runs inside the training process and never logs on
// the hot path.
//
// The error rule (docs/architecture.md): inside a process, errors are
// exceptions caught where they can be handled or reported; at the C
// boundaries (the probe's MPI wrappers, the SPANK callbacks) they are status
// codes and nothing throws across. Every message names the program and the
// phase, and for bad input what was expected.
#pragma once

#include <string>

#include <fmt/format.h>

namespace scout::log {

enum class Level { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

struct Sinks {
  bool stderr_plain = true;   // "program: message" (interactive)
  bool stderr_stamped = false;  // "<time> <level> program: message" (daemons)
  bool syslog = false;        // LOG_DAEMON, with the level's priority
};

// Once, early in main(). Reads SCOUT_LOG_LEVEL.
void init(const std::string& program, Sinks sinks);
const std::string& program();
bool enabled(Level l);
void write(Level l, const std::string& msg);
const char* to_string(Level l);
// "error", "warning"/"warn", "info", "debug"; nullopt-like false on others.
bool level_from(const std::string& name, Level& out);

template <class... A>
void error(fmt::format_string<A...> f, A&&... a) {
  write(Level::kError, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void warning(fmt::format_string<A...> f, A&&... a) {
  if (enabled(Level::kWarning)) write(Level::kWarning, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void info(fmt::format_string<A...> f, A&&... a) {
  if (enabled(Level::kInfo)) write(Level::kInfo, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void debug(fmt::format_string<A...> f, A&&... a) {
  if (enabled(Level::kDebug)) write(Level::kDebug, fmt::format(f, std::forward<A>(a)...));
}

}  // namespace scout::log
