// settings-man HOME: the man-page entries (roff) of the shared settings
// that can be set at HOME (plugstack, scoutd, scout-run), from the one table
// (common/settings.hpp). The build puts them into the man pages in place of
// @SETTINGS_PLUGSTACK@, @SETTINGS_SCOUTD@ and @SETTINGS_SCOUT_RUN@.
#include <cstdio>
#include <string>
#include <string_view>

#include "common/settings.hpp"

namespace {

using namespace scout::common;

std::string roff(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '-') out += "\\-";
    else if (c == '\\') out += "\\e";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

void entries(unsigned home) {
  const bool plug = home == kPlugstack;
  for (const auto* s : kNumericSettings) {
    if (!(s->homes & home)) continue;
    const char* meta = s->unit == "seconds" ? "S" : "X";
    if (plug) std::printf(".TP\n.BI %s= %s\n", roff(s->key).c_str(), meta);
    else std::printf(".TP\n.BI \\-\\-%s \" %s\"\n", roff(s->flag).c_str(), meta);
    std::printf("%s (default %s; %s).\n", roff(s->help).c_str(), num(s->def).c_str(), roff(expected_text(*s)).c_str());
  }
  for (const auto* s : kSwitchSettings) {
    if (!(s->homes & home)) continue;
    if (plug) std::printf(".TP\n.BR %s= on | off\n", roff(s->key).c_str());
    else std::printf(".TP\n.BR \\-\\-%s \" on|off\"\n", roff(s->flag).c_str());
    std::printf("%s (default %s).\n", roff(s->help).c_str(), s->def ? "on" : "off");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string h = argc == 2 ? argv[1] : "";
  if (h == "plugstack") entries(kPlugstack);
  else if (h == "scoutd") entries(kScoutd);
  else if (h == "scout-run") entries(kScoutRun);
  else {
    std::fprintf(stderr, "usage: settings-man plugstack|scoutd|scout-run\n");
    return 2;
  }
  return 0;
}
