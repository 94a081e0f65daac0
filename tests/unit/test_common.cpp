// common/: the bounded reader for untrusted JSON, running another program
// with a deadline, reading squeue's fixed fields, reading a root-owned file,
// the job's directory made by root, the probe's LD_PRELOAD.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/root_file.hpp"
#include "common/runtime_paths.hpp"
#include "common/slurm_jobs.hpp"
#include "common/slurm_nodes.hpp"
#include "common/spawn.hpp"
#include "common/untrusted_json.hpp"

using namespace scout::common;

TEST_CASE("untrusted JSON: depth is checked before parsing, at any depth, without recursion") {
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  CHECK(json_depth(deep, 1 << 30) == 1000000);
  std::string why;
  CHECK_FALSE(parse_untrusted(deep, {std::size_t{4} << 20, 32}, &why).has_value());
  CHECK(why == "JSON nested deeper than 32 levels");
  const std::string deep_obj = [] {
    std::string s;
    for (int i = 0; i < 1000000; ++i) s += "{\"a\":";
    s += "1";
    s += std::string(1000000, '}');
    return s;
  }();
  CHECK_FALSE(parse_untrusted(deep_obj, {std::size_t{16} << 20, 32}, &why).has_value());
  // Brackets inside strings (and escaped quotes) do not count.
  CHECK(json_depth(R"({"a":"[[[[\"{{{{","b":[1]})", 100) == 2);
  auto ok = parse_untrusted(R"({"a":[1,2,{"b":null}]})", kRequestLimits);
  REQUIRE(ok.has_value());
  CHECK((*ok)["a"][2]["b"].is_null());
  CHECK_FALSE(parse_untrusted(std::string(2000, ' '), {1000, 8}, &why).has_value());
  CHECK(why.find("expected at most 1000") != std::string::npos);
  CHECK_FALSE(parse_untrusted("{\"a\":", kRequestLimits, &why).has_value());
  CHECK(why == "not valid JSON");
}

TEST_CASE("untrusted JSON: typed ranks and hosts") {
  std::vector<std::int64_t> r;
  std::vector<std::string> h;
  CHECK(read_ranks(std::string("[0,4,7]"), r, 10));
  CHECK(r == std::vector<std::int64_t>{0, 4, 7});
  CHECK_FALSE(read_ranks(std::string("[[1]]"), r, 10));
  CHECK_FALSE(read_ranks(std::string("[1.5]"), r, 10));
  CHECK_FALSE(read_ranks(std::string("[-1]"), r, 10));
  CHECK_FALSE(read_ranks(std::string("[1,2,3]"), r, 2));
  CHECK_FALSE(read_ranks(std::string(200000, '[') + std::string(200000, ']'), r, 10));
  CHECK(read_hosts(std::string(R"(["n1","gpu-07.rack2"])"), h, 10));
  CHECK(h.size() == 2);
  CHECK_FALSE(read_hosts(std::string(R"(["n1; rm -rf /"])"), h, 10));
  CHECK_FALSE(read_hosts(std::string(R"([["n1"]])"), h, 10));
  CHECK_FALSE(read_hosts(std::string(R"({"n1":1})"), h, 10));
  CHECK(column_or("[[[", kListLimits, nlohmann::json::array()) == nlohmann::json::array());
  CHECK(column_or("[1]", kEvidenceLimits, nlohmann::json::object()) == nlohmann::json::object());  // wrong type
}

TEST_CASE("spawn: argv without a shell, output captured, a deadline that kills") {
  auto r = run_command({"printf", "%s|%s", "a b", "$(id)"}, 5);
  CHECK(r.ok());
  CHECK(r.out == "a b|$(id)");  // no shell ever saw it
  r = run_command({"false"}, 5);
  CHECK(r.status == 1);
  CHECK(r.error == "false exited with status 1");
  const auto t0 = std::chrono::steady_clock::now();
  r = run_command({"sleep", "30"}, 0.3);
  CHECK(r.timed_out);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  CHECK(r.error.find("no answer in 0.3 s") != std::string::npos);
  r = run_command({"/nonexistent/scontrol"}, 1);
  CHECK_FALSE(r.ok());
}

TEST_CASE("squeue fields: uid, state, node list; nothing a user names can be taken for them") {
  auto j = parse_squeue_line("1002|RUNNING|n[1-3]");
  REQUIRE(j.has_value());
  CHECK(j->uid == 1002);
  CHECK(j->running);
  CHECK(j->nodelist == "n[1-3]");
  CHECK(parse_squeue_line("1002|COMPLETED|n1")->running == false);
  CHECK(parse_squeue_line("1002|COMPLETING|n1")->running);
  CHECK_FALSE(parse_squeue_line("x|RUNNING|n1").has_value());
  CHECK_FALSE(parse_squeue_line("1002|RUNNING JobState=RUNNING|n1").has_value());
  CHECK_FALSE(parse_squeue_line("1002|RUNNING|n1 n2").has_value());
  CHECK(parse_squeue_line("1002|PENDING|(null)")->nodelist.empty());
  // With the submission time (SLURM_TIME_FORMAT=%s): what tells a job from
  // an earlier one of the same id.
  j = parse_squeue_line("1002|RUNNING|1733450000|n[1-3]");
  REQUIRE(j.has_value());
  CHECK(j->submitted == 1733450000);
  CHECK(j->nodelist == "n[1-3]");
  CHECK(parse_squeue_line("1002|PENDING|Unknown|(null)")->submitted == 0);
  CHECK(parse_squeue_line("1002|RUNNING|n1")->submitted == 0);
  CHECK(parse_squeue_line("1002|RUNNING|2026-12-06T02:30:00|n1")->submitted == 0);  // not seconds: no time
  CHECK_FALSE(parse_squeue_line("1002|RUNNING|17|n1|n2").has_value());
}

TEST_CASE("sinfo fields: state, who set the reason, the reason read whole; scout's reasons told from others'") {
  using scout::common::parse_sinfo_line;
  auto n = parse_sinfo_line("n3|drained|root|2026-12-04T02:26:48|NHC: check_hw_mem | 2 DIMMs");
  REQUIRE(n.has_value());
  CHECK(n->name == "n3");
  CHECK(n->drain);
  CHECK_FALSE(n->reboot_pending);
  CHECK(n->reason == "NHC: check_hw_mem | 2 DIMMs");
  CHECK(n->reason_by == "root");
  CHECK(n->other_reason());
  CHECK_FALSE(n->scout_reason());
  n = parse_sinfo_line("n1|reboot^|root|2026-12-04T02:26:53|scout: stall rank 4 job 7 : reboot issued");
  REQUIRE(n.has_value());
  CHECK(n->reboot_pending);
  CHECK(n->scout_reason());
  n = parse_sinfo_line("n2|idle|Unknown|Unknown|none");
  REQUIRE(n.has_value());
  CHECK(n->reason.empty());
  CHECK(n->reason_by.empty());
  CHECK_FALSE(n->drain);
  CHECK_FALSE(n->other_reason());
  CHECK(parse_sinfo_line("n2|draining@|slurm|t|scout: x")->drain);
  CHECK(parse_sinfo_line("n2|draining@|slurm|t|scout: x")->reboot_pending);
  CHECK(parse_sinfo_line("n2|down*|slurm|t|Not responding")->down);
  CHECK_FALSE(parse_sinfo_line("n2|idle|x|y").has_value());         // no reason field
  CHECK_FALSE(parse_sinfo_line("n2 n3|idle|x|y|none").has_value());  // not a node name
  CHECK_FALSE(parse_sinfo_line("n2|IDLE STATE|x|y|none").has_value());
}

TEST_CASE("read_root_file: a small regular file of root's, never a link, a FIFO, another's or a large one") {
  char tmpl[] = "/tmp/scout-rootfile-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string plain = dir + "/plain", link = dir + "/link", fifo = dir + "/fifo", big = dir + "/big";
  { std::ofstream(plain) << "n1,n2\n"; }
  { std::ofstream(big) << std::string(5000, 'x'); }
  REQUIRE(::symlink(plain.c_str(), link.c_str()) == 0);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string why;
  if (::geteuid() == 0) {
    auto v = scout::common::read_root_file(plain, 4096, &why);
    REQUIRE(v);
    CHECK(*v == "n1,n2");  // the trailing newline dropped
    CHECK_FALSE(scout::common::read_root_file(big, 4096, &why));
    CHECK(why.find("larger than 4096") != std::string::npos);
    REQUIRE(::chown(plain.c_str(), 65534, 65534) == 0);
    CHECK_FALSE(scout::common::read_root_file(plain, 4096, &why));
    CHECK(why.find("not owned by root") != std::string::npos);
  } else {
    CHECK_FALSE(scout::common::read_root_file(plain, 4096, &why));
    CHECK(why.find("not owned by root") != std::string::npos);
  }
  CHECK_FALSE(scout::common::read_root_file(link, 4096, &why));  // O_NOFOLLOW
  CHECK_FALSE(scout::common::read_root_file(fifo, 4096, &why));  // returns at once: not a regular file
  CHECK(why.find("not a regular file") != std::string::npos);
  CHECK_FALSE(scout::common::read_root_file(dir + "/none", 4096, &why));
  std::filesystem::remove_all(dir);
}

// --- the job's directory, made by root (common/runtime_paths.hpp) ----------
// As root (CI): uid 65534 plays the job's user, 65533 another user. Not
// root: only the refusal of a parent that is not root's is checked.

namespace {
constexpr uid_t kJobUser = 65534, kOtherUser = 65533;

struct TempTree {
  std::string dir;
  TempTree() {
    char tmpl[] = "/tmp/scout-jobdir-XXXXXX";
    dir = ::mkdtemp(tmpl);
  }
  ~TempTree() { std::filesystem::remove_all(dir); }
};

struct stat lstat_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) st.st_mode = 0;
  return st;
}

// Root-made for the job: a directory (not a link), the job user's, 0700.
bool the_jobs(const std::string& path) {
  const struct stat st = lstat_of(path);
  return S_ISDIR(st.st_mode) && st.st_uid == kJobUser && (st.st_mode & 07777) == 0700;
}

// Another user's directory with `file` in it, mode 0777.
void plant_dir(const std::string& path, uid_t owner, const std::string& file = "") {
  REQUIRE(::mkdir(path.c_str(), 0777) == 0);
  REQUIRE(::chmod(path.c_str(), 0777) == 0);
  if (!file.empty()) std::ofstream(path + "/" + file) << "planted\n";
  REQUIRE(::chown(path.c_str(), owner, owner) == 0);
}

std::vector<std::string> entries_starting(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().string());
  return out;
}
}  // namespace

TEST_CASE("make_job_directory: links, other users' directories and old aside names never end as the job's directory") {
  TempTree t;
  std::string note, why;
  if (::geteuid() != 0) {
    CHECK_FALSE(make_job_directory(t.dir, "7", ::geteuid(), ::getegid(), &note, &why));
    CHECK(why.find("expected a directory of root's") != std::string::npos);
    MESSAGE("not root: the cases that need other uids are skipped");
    return;
  }
  const std::string P = t.dir + "/run";
  // An absent parent is made root's 0755; the job's directory in it.
  REQUIRE(make_job_directory(P, "100", kJobUser, kJobUser, &note, &why));
  CHECK(lstat_of(P).st_uid == 0);
  CHECK((lstat_of(P).st_mode & 07777) == 0755);
  CHECK(the_jobs(P + "/100"));
  CHECK(note.empty());
  // From here the parent is sticky and world-writable, as /run/scout of old
  // installs and of the test cluster: other users can make names in it.
  REQUIRE(::chmod(P.c_str(), 01777) == 0);

  SUBCASE("a symbolic link to root's directory: replaced, nothing done through it") {
    const std::string target = t.dir + "/target";
    REQUIRE(::mkdir(target.c_str(), 0755) == 0);
    REQUIRE(::symlink(target.c_str(), (P + "/101").c_str()) == 0);
    REQUIRE(::lchown((P + "/101").c_str(), kOtherUser, kOtherUser) == 0);
    REQUIRE(make_job_directory(P, "101", kJobUser, kJobUser, &note, &why));
    CHECK(the_jobs(P + "/101"));
    CHECK(lstat_of(target).st_uid == 0);
    CHECK((lstat_of(target).st_mode & 07777) == 0755);
    CHECK(note.rfind(P + "/101 was created by uid 65533 before this job (of uid 65534; a symbolic link", 0) == 0);
    CHECK(note.find("removed") != std::string::npos);
  }
  SUBCASE("another user's directory with a socket name in it: exchanged, hers left aside whole") {
    plant_dir(P + "/102", kOtherUser, "scoutd.n1.sock");
    const ino_t planted = lstat_of(P + "/102").st_ino;
    REQUIRE(make_job_directory(P, "102", kJobUser, kJobUser, &note, &why));
    CHECK(the_jobs(P + "/102"));
    CHECK(lstat_of(P + "/102").st_ino != planted);
    CHECK_FALSE(std::filesystem::exists(P + "/102/scoutd.n1.sock"));
    const auto aside = entries_starting(P, ".scout-refused.102.65533.");
    REQUIRE(aside.size() == 1);
    CHECK(lstat_of(aside[0]).st_ino == planted);
    CHECK(std::filesystem::exists(aside[0] + "/scoutd.n1.sock"));
    CHECK(aside[0].size() == (P + "/.scout-refused.102.65533.").size() + 16);  // a random suffix
    CHECK(note.find("moved aside to " + aside[0]) != std::string::npos);
  }
  SUBCASE("the job user's own directory, open to everyone: taken back too") {
    plant_dir(P + "/103", kJobUser);
    const ino_t planted = lstat_of(P + "/103").st_ino;
    REQUIRE(make_job_directory(P, "103", kJobUser, kJobUser, &note, &why));
    CHECK(the_jobs(P + "/103"));
    CHECK(lstat_of(P + "/103").st_ino != planted);
    CHECK(note.find("created by uid 65534 before this job (of uid 65534; a directory, mode 0777)") !=
          std::string::npos);
  }
  SUBCASE("names the old scheme would have used, planted in advance: no effect") {
    const std::string pid = std::to_string(::getpid()), now = std::to_string(std::time(nullptr));
    for (long d = -2; d <= 2; ++d)
      plant_dir(P + "/.scout-refused.104.65533." + pid + "." + std::to_string(std::time(nullptr) + d), kOtherUser,
                "x");
    REQUIRE(::symlink((t.dir + "/nowhere").c_str(), (P + "/104.new." + pid).c_str()) == 0);
    REQUIRE(::lchown((P + "/104.new." + pid).c_str(), kOtherUser, kOtherUser) == 0);
    plant_dir(P + "/104", kOtherUser, "scoutd.n1.sock");
    REQUIRE(make_job_directory(P, "104", kJobUser, kJobUser, &note, &why));
    CHECK(the_jobs(P + "/104"));
    CHECK_FALSE(std::filesystem::exists(P + "/104/scoutd.n1.sock"));
    CHECK(entries_starting(P, ".scout-refused.104.65533.").size() == 6);  // five planted, hers moved aside
  }
  SUBCASE("a directory an earlier step of the job made: kept, with what is in it") {
    REQUIRE(make_job_directory(P, "105", kJobUser, kJobUser, &note, &why));
    std::ofstream(P + "/105/scoutd.n1.sock") << "";
    const ino_t first = lstat_of(P + "/105").st_ino;
    REQUIRE(make_job_directory(P, "105", kJobUser, kJobUser, &note, &why));
    CHECK(lstat_of(P + "/105").st_ino == first);
    CHECK(std::filesystem::exists(P + "/105/scoutd.n1.sock"));
    CHECK(note.empty());
  }
  SUBCASE("steps of one job at once, over a planted directory: one directory, the job's, nothing left behind") {
    plant_dir(P + "/106", kOtherUser);
    std::vector<std::thread> steps;
    std::atomic<int> made{0};
    for (int i = 0; i < 8; ++i)
      steps.emplace_back([&] { made += make_job_directory(P, "106", kJobUser, kJobUser) ? 1 : 0; });
    for (auto& s : steps) s.join();
    CHECK(made == 8);
    CHECK(the_jobs(P + "/106"));
    CHECK(entries_starting(P, ".scout-new.").empty());
    CHECK(entries_starting(P, ".scout-refused.106.65533.").size() == 1);
  }
  SUBCASE("parents root cannot trust are refused: a link, one others may write, another user's") {
    REQUIRE(::symlink(P.c_str(), (t.dir + "/link").c_str()) == 0);
    CHECK_FALSE(make_job_directory(t.dir + "/link", "107", kJobUser, kJobUser, &note, &why));
    CHECK(why.find("not a directory (a symbolic link?)") != std::string::npos);
    REQUIRE(::mkdir((t.dir + "/open").c_str(), 0777) == 0);
    REQUIRE(::chmod((t.dir + "/open").c_str(), 0777) == 0);
    CHECK_FALSE(make_job_directory(t.dir + "/open", "107", kJobUser, kJobUser, &note, &why));
    CHECK(why.find("mode 0777 lets other users replace what root makes there") != std::string::npos);
    plant_dir(t.dir + "/hers", kOtherUser);
    REQUIRE(::chmod((t.dir + "/hers").c_str(), 0755) == 0);
    CHECK_FALSE(make_job_directory(t.dir + "/hers", "107", kJobUser, kJobUser, &note, &why));
    CHECK(why.find("owned by uid 65533; expected a directory of root's") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(t.dir + "/hers/107"));
  }
}

TEST_CASE("compose_ld_preload: the user's value kept whole at any length Slurm carries, the probe added once") {
  const std::string probe = "/usr/lib/libscout_probe.so", nccl = "/usr/lib/libscout_nccl.so";
  std::string user;
  while (user.size() < 5000) user += "/opt/site/lib/libpreload" + std::to_string(user.size()) + ".so:";
  user.pop_back();
  REQUIRE(user.size() >= 5000);
  auto v = compose_ld_preload(user, {probe});
  REQUIRE(v);
  CHECK(*v == probe + ":" + user);  // the probe first: its MPI functions are the ones called
  // Already named (ld.so takes ':' or ' '): unchanged; a longer name is not the probe's.
  CHECK(*compose_ld_preload("/a.so " + probe, {probe}) == "/a.so " + probe);
  CHECK(*compose_ld_preload(probe + ".old", {probe}) == probe + ":" + probe + ".old");
  CHECK(*compose_ld_preload(probe, {probe, nccl}) == nccl + ":" + probe);
  CHECK(*compose_ld_preload("", {probe, nccl}) == probe + ":" + nccl);
  // Slurm's limit: exactly kMaxLdPreloadBytes is set; one more is refused, the user's value untouched.
  CHECK(kMaxLdPreloadBytes == 131059);
  const std::string big = "/" + std::string(kMaxLdPreloadBytes - probe.size() - 2, 'x');
  REQUIRE(compose_ld_preload(big, {probe}));
  CHECK(compose_ld_preload(big, {probe})->size() == kMaxLdPreloadBytes);
  std::string why;
  CHECK_FALSE(compose_ld_preload(big + "y", {probe}, &why));
  CHECK(why.find("Slurm sets at most 131059 bytes") != std::string::npos);
  CHECK(*compose_ld_preload(big + "y:" + probe, {probe}) == big + "y:" + probe);  // nothing to add: kept
}

TEST_CASE("control_runtime_root: root has no /tmp default; ordinary users keep theirs") {
  const char* saved_r = std::getenv("SCOUT_RUNTIME_DIR");
  const char* saved_x = std::getenv("XDG_RUNTIME_DIR");
  const std::string r = saved_r ? saved_r : "", x = saved_x ? saved_x : "";
  ::unsetenv("SCOUT_RUNTIME_DIR");
  ::unsetenv("XDG_RUNTIME_DIR");
  std::string why;
  const auto none = control_runtime_root(&why);
  if (::getuid() == 0) {
    CHECK_FALSE(none);
    CHECK(why.find("expected --runtime-dir DIR, $SCOUT_RUNTIME_DIR or $XDG_RUNTIME_DIR") != std::string::npos);
    CHECK(default_runtime_root() == "/tmp/scout-0");  // scout-run's and scoutd's own default is unchanged
  } else {
    REQUIRE(none);
    CHECK(*none == "/tmp/scout-" + std::to_string(::getuid()));
  }
  ::setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
  CHECK(control_runtime_root().value_or("") == "/run/user/4242/scout");
  ::setenv("SCOUT_RUNTIME_DIR", "/run/scout", 1);
  CHECK(control_runtime_root().value_or("") == "/run/scout");
  if (saved_r) ::setenv("SCOUT_RUNTIME_DIR", r.c_str(), 1);
  else ::unsetenv("SCOUT_RUNTIME_DIR");
  if (saved_x) ::setenv("XDG_RUNTIME_DIR", x.c_str(), 1);
  else ::unsetenv("XDG_RUNTIME_DIR");
}
