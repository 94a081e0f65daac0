// libFuzzer target: the parsers of what sites and users write: the SPANK
// plugin's plugstack arguments (from a plugstack.conf line and from the
// file reader), scoutd's command line (the option table every scout program
// uses), and scout.conf. Errors are fine; crashes, hangs and leaks are not.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ledgerd/site_config.hpp"
#include "common/options.hpp"
#include "scoutd/daemon/config.hpp"
#include "spank/plugin_config.hpp"

using namespace scout;

namespace {
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = in.find('\x01');
  const std::string a = in.substr(0, cut), b = cut == std::string::npos ? std::string() : in.substr(cut + 1);

  // plugstack arguments, as Slurm splits them (on blanks).
  {
    spank::PluginConfig cfg;
    std::vector<std::string> args;
    for (auto& w : split(a, ' '))
      if (!w.empty()) args.push_back(w);
    (void)spank::parse_plugin_args(args, cfg);
  }
  // The plugstack.conf reader, on a file with that text.
  {
    int fd = memfd_create("plugstack", MFD_CLOEXEC);
    if (fd >= 0) {
      if (write(fd, in.data(), in.size()) == static_cast<ssize_t>(in.size())) {
        std::vector<std::string> args;
        (void)spank::read_plugstack_args("/proc/self/fd/" + std::to_string(fd), args);
      }
      close(fd);
    }
  }
  // scoutd's command line: NUL-separated words after argv[0].
  {
    std::vector<std::string> words = split(b, '\0');
    if (words.size() > 64) words.resize(64);
    std::vector<char*> argv;
    std::string prog = "scoutd";
    argv.push_back(prog.data());
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    // --help and --version print and return; stdout is discarded by the runner.
    bool skip = false;
    for (auto& w : words)
      if (w == "--help" || w == "-h" || w == "--version" || w == "-V" || w == "--print-config") skip = true;
    if (!skip) {
      scoutd::ScoutdConfig cfg;
      try {
        if (scoutd::parse_scoutd_args(static_cast<int>(argv.size() - 1), argv.data(), cfg)) scoutd::validate(cfg);
      } catch (const std::exception&) {
        // ConfigError: a clear message, which is the point
      }
    }
  }
  // scout.conf.
  try {
    (void)ledgerd::parse_site_config(a, "/etc/scout/scout.conf");
  } catch (const std::exception&) {
  }
  return 0;
}
