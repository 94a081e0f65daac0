// docs/architecture.md checked against the code, so the two cannot drift:
// every source folder is in the component table, the verdict-kind table is
// libc3's list of kinds with the right drain column, the record versions the
// readers accept are the ABI headers present, every thread scoutd starts is
// in the threads table, and no source file is over 500 lines.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "libc3/verdict_kind.hpp"

namespace fs = std::filesystem;

namespace {

fs::path top() {
  const char* src = std::getenv("top_srcdir");
  return src ? fs::path(src) : fs::path("..");
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE_MESSAGE(in.good(), "cannot read ", p.string());
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The lines of the section that starts with `heading` (up to the next "## ").
std::vector<std::string> section(const std::string& doc, const std::string& heading) {
  std::vector<std::string> out;
  bool in = false;
  std::size_t pos = 0;
  while (pos < doc.size()) {
    std::size_t end = doc.find('\n', pos);
    if (end == std::string::npos) end = doc.size();
    const std::string line = doc.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("## ", 0) == 0) {
      if (in) break;
      in = line.rfind(heading, 0) == 0;
      continue;
    }
    if (in) out.push_back(line);
  }
  REQUIRE_MESSAGE(!out.empty(), "docs/architecture.md has no section '", heading, "'");
  return out;
}

// The cells of a table row "| a | b |".
std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::string cur;
  bool code = false;
  for (std::size_t i = 1; i < row.size(); ++i) {
    const char c = row[i];
    if (c == '`') code = !code;
    if (c == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
      cur += '|';
      ++i;
      continue;
    }
    if (c == '|' && !code) {
      auto b = cur.find_first_not_of(' '), e = cur.find_last_not_of(' ');
      out.push_back(b == std::string::npos ? "" : cur.substr(b, e - b + 1));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

bool source_file(const fs::path& p) {
  static const std::set<std::string> ext = {".cpp", ".hpp", ".c", ".h", ".cu"};
  return ext.count(p.extension().string()) > 0;
}

// A build directory configured inside the source tree is not source.
bool skipped(const fs::path& dir) {
  const std::string n = dir.filename().string();
  return n.empty() || n[0] == '.' || n == "autom4te.cache" || fs::exists(dir / "config.status");
}

bool holds_source(const fs::path& dir) {
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && skipped(it->path())) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && source_file(it->path())) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("docs: every folder with source code is in the component table") {
  const auto lines = section(read(top() / "docs/architecture.md"), "## Components");
  std::string table;
  for (auto& l : lines)
    if (l.rfind("| `", 0) == 0) table += cells(l).at(0) + "\n";
  std::vector<std::string> folders;
  for (auto& e : fs::directory_iterator(top()))
    if (e.is_directory() && !skipped(e.path()) && holds_source(e.path())) {
      const std::string name = e.path().filename().string();
      if (name == "scoutd") {  // scoutd's parts each have a row
        for (auto& sub : fs::directory_iterator(e.path()))
          if (sub.is_directory() && holds_source(sub.path()))
            folders.push_back("scoutd/" + sub.path().filename().string());
      } else {
        folders.push_back(name);
      }
    }
  CHECK(folders.size() > 10);
  for (auto& f : folders) CHECK_MESSAGE(table.find("`" + f + "/`") != std::string::npos, f, "/ is not in the table");
}

TEST_CASE("docs: the verdict-kind table is libc3's list, with the drain column of its table") {
  const auto lines = section(read(top() / "docs/architecture.md"), "## Verdict kinds");
  std::set<std::string> documented;
  const auto defaults = scout::c3::default_drain_kinds();
  for (auto& l : lines) {
    if (l.rfind("| `", 0) != 0) continue;
    const auto c = cells(l);
    REQUIRE(c.size() >= 4);
    const std::string name = c[0].substr(1, c[0].find('`', 1) - 1);
    const auto kind = scout::c3::verdict_kind_from(name);
    REQUIRE_MESSAGE(kind, "docs list a kind the code does not know: ", name);
    documented.insert(name);
    const std::string& drains = c.back();
    CHECK_MESSAGE((drains.rfind("yes", 0) == 0) == scout::c3::drainable(*kind), name, ": drain column '", drains, "'");
    const bool by_default = std::find(defaults.begin(), defaults.end(), name) != defaults.end();
    CHECK_MESSAGE((drains.find("default") != std::string::npos) == by_default, name, ": drain column '", drains,
                  "'");
  }
  std::set<std::string> code;
  for (auto k : scout::c3::kAllVerdictKinds) code.insert(scout::c3::to_string(k));
  CHECK(documented == code);
}

TEST_CASE("docs: the record versions readers accept are the ABI headers present") {
  std::set<int> headers;
  const std::string pre = "scout_record_v", post = ".h";
  for (auto& e : fs::directory_iterator(top() / "libc3/abi")) {
    const std::string n = e.path().filename().string();
    if (n.size() <= pre.size() + post.size() || n.rfind(pre, 0) != 0 || n.compare(n.size() - 2, 2, post) != 0)
      continue;
    const std::string v = n.substr(pre.size(), n.size() - pre.size() - post.size());
    if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos) headers.insert(std::stoi(v));
  }
  REQUIRE(!headers.empty());
  const auto lines = section(read(top() / "docs/architecture.md"), "## The record ABI");
  std::string accept;
  for (auto& l : lines)
    if (l.find("Readers accept") != std::string::npos) accept = l;
  REQUIRE_MESSAGE(!accept.empty(), "the record ABI section has no 'Readers accept' line");
  std::set<int> documented;  // every number in the line
  for (std::size_t i = 0; i < accept.size();) {
    if (std::isdigit(static_cast<unsigned char>(accept[i]))) {
      std::size_t j = i;
      while (j < accept.size() && std::isdigit(static_cast<unsigned char>(accept[j]))) ++j;
      documented.insert(std::stoi(accept.substr(i, j - i)));
      i = j;
    } else {
      ++i;
    }
  }
  CHECK(documented == headers);
}

TEST_CASE("docs: every thread scoutd starts is in the threads table") {
  const auto lines = section(read(top() / "docs/architecture.md"), "## scoutd's threads");
  std::string table;
  for (auto& l : lines) table += l + "\n";
  int found = 0;
  for (const char* dir : {"scoutd", "replay", "learn"})
    for (auto& e : fs::recursive_directory_iterator(top() / dir)) {
      if (!e.is_regular_file() || e.path().extension() != ".cpp") continue;
      if (read(e.path()).find("= std::thread(") == std::string::npos) continue;
      ++found;
      const std::string rel = fs::relative(e.path(), top()).string();
      CHECK_MESSAGE(table.find("`" + rel + "`") != std::string::npos, rel, " starts a thread the table does not list");
    }
  CHECK(found >= 4);
}

TEST_CASE("source files: none over 500 lines") {
  int files = 0;
  for (auto it = fs::recursive_directory_iterator(top()); it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && skipped(it->path())) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || !source_file(it->path())) continue;
    const std::string rel = fs::relative(it->path(), top()).string();
    const std::string text = read(it->path());
    const auto lines = std::count(text.begin(), text.end(), '\n');
    ++files;
    CHECK_MESSAGE(lines <= 500, rel, " has ", lines, " lines; split it (at most 500)");
  }
  CHECK(files > 100);
}
