// common/: the bounded reader for untrusted JSON, running another program
// with a deadline, reading squeue's fixed fields, reading a root-owned file.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/root_file.hpp"
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
