// RankEvidence to and from JSON (see rank_evidence.hpp).
#include "scoutd/observe/rank_evidence.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/json_num.hpp"
#include "libc3/rank_record.hpp"

namespace scout::scoutd {

using nlohmann::json;

void to_json(json& j, const RankEvidence& e) {
  j = json{{"rank", e.rank}, {"node", e.node}, {"pid", e.pid}, {"attached", e.attached},
           {"alive", e.alive}, {"finalized", e.finalized}, {"seq", e.seq},
           {"fingerprint", fmt::format("{:016x}", e.fingerprint)},
           {"comm", fmt::format("{:016x}", e.comm_id)}, {"kind", e.kind},
           {"in_collective", e.in_collective}, {"stalled_s", e.stalled_s},
           {"state", std::string(1, e.state)}, {"wchan", e.wchan}, {"death_ns", e.death_ns},
           {"syscall", e.syscall}, {"rchar", e.rchar}, {"wchar", e.wchar},
           {"steps", e.steps}, {"step_s", e.step_s}, {"compute_s", e.compute_s},
           {"wait_s", e.wait_s}};
  if (!e.record_invalid.empty()) j["record_invalid"] = e.record_invalid;
  if (e.in_collective) j["args"] = {e.coll_count, e.coll_datatype, e.coll_op, e.coll_root};
  if (!e.recent.empty()) {
    json r = json::array();
    for (auto& x : e.recent) r.push_back({x.seq, fmt::format("{:016x}", x.fingerprint), fmt::format("{:016x}", x.comm)});
    j["recent"] = std::move(r);
  }
  json cw = json::object();
  for (auto& [c, w] : e.comm_wait) cw[fmt::format("{:016x}", c)] = w;
  j["comm_wait"] = cw;
  if (e.compute_jitter_s > 0) j["compute_jitter_s"] = e.compute_jitter_s;
  if (!e.comm_jitter.empty()) {
    json cj = json::object();
    for (auto& [c, w] : e.comm_jitter) cj[fmt::format("{:016x}", c)] = w;
    j["comm_jitter"] = cj;
  }
  json cm = json::object();
  auto in_use = [&e](std::uint64_t c) {
    if (e.threaded) return true;  // its communicators say whether it is a member
    if (c == e.p2p_comm || c == e.p2p_any_comm) return true;  // its point-to-point wait's
    if (e.comm_wait.count(c)) return true;
    for (auto& p : e.comm_progress)
      if (p.id == c) return true;
    return false;
  };
  for (auto& [c, m] : e.comm_members)
    if (in_use(c)) cm[fmt::format("{:016x}", c)] = m;  // only the ones in use
  j["comm_members"] = cm;
  if (e.threaded) {
    json cs = json::array();
    for (auto& c : e.comm_progress)
      cs.push_back({fmt::format("{:016x}", c.id), c.entered, c.completed, fmt::format("{:016x}", c.fingerprint), c.kind,
                    c.since_s});
    json ts = json::array();
    for (auto& t : e.threads) {
      json x = {{"tid", t.tid}};
      if (t.coll_kind)
        x["collective"] = {{"kind", t.coll_kind}, {"comm", fmt::format("{:016x}", t.coll_comm)},
                           {"ordinal", t.coll_ordinal}, {"s", t.coll_s}};
      if (!t.p2p_call.empty())
        x["p2p"] = {{"call", t.p2p_call}, {"wait_s", t.p2p_wait_s}, {"peers", t.p2p_peers},
                    {"comm", fmt::format("{:016x}", t.p2p_comm)}};
      ts.push_back(std::move(x));
    }
    j["threads"] = {{"comms", cs}, {"threads", ts}, {"full", e.threads_full}, {"comms_full", e.comms_full}};
  }
  if (e.state_s > 0) j["state_s"] = e.state_s;
  if (!e.stack.empty()) j["stack"] = {{"frames", e.stack}};
  else if (!e.stack_error.empty()) j["stack"] = {{"error", e.stack_error}};
  if (e.cpu_ns >= 0) {
    j["sched"] = {{"cpu_ns", e.cpu_ns}, {"runq_ns", e.runq_ns}, {"at_ns", e.sched_at_ns}};
    if (e.coll_in_ns >= 0) j["sched"]["coll_in_ns"] = e.coll_in_ns;
    if (e.cpu_khz > 0) j["sched"]["cpu_khz"] = e.cpu_khz;
  }
  if (e.dead_s > 0) j["dead_s"] = e.dead_s;
  if (e.died_on_stop) j["died_on_stop"] = true;
  if (e.p2p_ops || !e.p2p_call.empty()) {
    j["p2p"] = {{"ops", e.p2p_ops}, {"call", e.p2p_call}, {"wait_s", e.p2p_wait_s}, {"peers", e.p2p_peers},
                {"more", e.p2p_more}, {"comm", fmt::format("{:016x}", e.p2p_comm)},
                {"any_comm", fmt::format("{:016x}", e.p2p_any_comm)}};
    if (e.p2p_tag >= 0) j["p2p"]["tag"] = e.p2p_tag;
    if (!e.p2p_dirs.empty()) j["p2p"]["dirs"] = e.p2p_dirs;
    if (!e.p2p_dirs.empty() && e.p2p_recv_tags.size() == e.p2p_dirs.size() &&
        e.p2p_send_tags.size() == e.p2p_dirs.size())
      j["p2p"]["tags"] = {{"recv", e.p2p_recv_tags}, {"send", e.p2p_send_tags}};
    if (e.p2p_any_comm && e.comm_members.count(e.p2p_any_comm))
      j["comm_members"][fmt::format("{:016x}", e.p2p_any_comm)] = e.comm_members.at(e.p2p_any_comm);
  }
  if (!e.end_kind.empty())
    j["end"] = {{"kind", e.end_kind}, {"code", e.end_code}, {"addr", fmt::format("{:x}", e.end_addr)},
                {"ns", e.end_ns}, {"seq", e.end_seq}};
  if (!e.end_kind.empty() && e.end_age_s >= 0) j["end"]["age_s"] = e.end_age_s;
  if (!e.end_kind.empty() && !e.end_call.empty()) j["end"]["call"] = e.end_call;
  if (!e.end_kind.empty() && e.ended_on_stop) j["end"]["on_stop"] = true;
  if (e.gpu.present) {
    j["gpu"] = {{"bus_id", e.gpu.bus_id}, {"device", e.gpu.device}, {"tracking", e.gpu.tracking},
                {"started", e.gpu.started}, {"done", e.gpu.done}, {"idle_s", e.gpu.idle_s},
                {"captured", e.gpu.captured}, {"untracked", e.gpu.untracked}};
    json cs = json::array();
    for (auto& c : e.gpu.comms) cs.push_back({fmt::format("{:016x}", c.id), c.issued, c.begun, c.done});
    j["gpu"]["comms"] = cs;
  }
  if (!e.peers.empty()) {
    json ps = json::array();
    for (auto& [w, p] : e.peers) ps.push_back({w, p.sent, p.recvd, p.sent_bytes, p.recvd_bytes, p.waits, p.wait_s, p.send_wait_s});
    j["peers"] = ps;
  }
  if (!e.outsigs.empty()) {
    json os = json::array();
    for (auto& o : e.outsigs)
      os.push_back({fmt::format("{:016x}", o.comm), o.call, o.kind, fmt::format("{:016x}", o.sig)});
    j["outsigs"] = os;
  }
}

void from_json(const json& j, RankEvidence& e) {
  e.rank = common::json_int<int>(j, "rank");
  e.node = j.at("node").get<std::string>();
  e.pid = common::json_int<int>(j, "pid");
  e.attached = j.at("attached").get<bool>();
  if (j.contains("record_invalid") && j["record_invalid"].is_string())
    e.record_invalid = j["record_invalid"].get<std::string>().substr(0, 256);
  e.alive = j.at("alive").get<bool>();
  e.finalized = j.at("finalized").get<bool>();
  e.seq = common::json_int<std::uint64_t>(j, "seq");
  e.fingerprint = std::stoull(j.at("fingerprint").get<std::string>(), nullptr, 16);
  e.comm_id = std::stoull(j.at("comm").get<std::string>(), nullptr, 16);
  e.kind = common::json_int<std::uint32_t>(j, "kind");
  e.in_collective = j.at("in_collective").get<bool>();
  if (const auto a = j.find("args"); a != j.end()) {
    // [count, datatype, op, root]: the counts and root signed, the codes not
    if (!a->is_array() || a->size() != 4 || !(*a)[0].is_number_integer() || !(*a)[1].is_number_unsigned() ||
        !(*a)[2].is_number_unsigned() || !(*a)[3].is_number_integer())
      throw std::invalid_argument("args: expected [count, datatype code, op code, root], integers");
    e.coll_count = (*a)[0].get<std::int64_t>();
    e.coll_datatype = (*a)[1].get<std::uint64_t>();
    e.coll_op = (*a)[2].get<std::uint64_t>();
    e.coll_root = (*a)[3].get<std::int64_t>();
  }
  if (const auto r = j.find("recent"); r != j.end()) {
    if (!r->is_array() || r->size() > kMaxRecent)
      throw std::invalid_argument(
          fmt::format("recent: expected at most {} [position, fingerprint, communicator]", kMaxRecent));
    auto hex16 = [](const json& v) {
      return v.is_string() && v.get<std::string>().size() == 16 &&
             v.get<std::string>().find_first_not_of("0123456789abcdef") == std::string::npos;
    };
    for (auto& x : *r) {
      if (!x.is_array() || x.size() != 3 || !x[0].is_number_unsigned() || !hex16(x[1]) || !hex16(x[2]))
        throw std::invalid_argument("recent: expected [position, 16 hex digits, 16 hex digits]");
      e.recent.push_back({x[0].get<std::uint64_t>(), std::stoull(x[1].get<std::string>(), nullptr, 16),
                          std::stoull(x[2].get<std::string>(), nullptr, 16)});
    }
  }
  e.stalled_s = j.at("stalled_s").get<double>();
  auto st = j.at("state").get<std::string>();
  e.state = st.empty() ? '?' : st[0];
  e.wchan = j.at("wchan").get<std::string>();
  e.death_ns = common::json_int<std::int64_t>(j, "death_ns");
  e.syscall = common::json_int_or(j, "syscall", -1L);
  e.rchar = common::json_int_or(j, "rchar", -1LL);
  e.wchar = common::json_int_or(j, "wchar", -1LL);
  e.steps = common::json_int_or(j, "steps", 0);
  e.step_s = j.value("step_s", 0.0);
  e.compute_s = j.value("compute_s", 0.0);
  e.wait_s = j.value("wait_s", 0.0);
  if (j.contains("comm_wait") && j["comm_wait"].is_object())
    for (auto& [k, v] : j["comm_wait"].items())
      if (v.is_number()) e.comm_wait[std::stoull(k, nullptr, 16)] = v.get<double>();
  e.compute_jitter_s = j.value("compute_jitter_s", 0.0);
  if (!(e.compute_jitter_s >= 0 && e.compute_jitter_s < 1e6)) e.compute_jitter_s = 0;
  if (j.contains("comm_jitter") && j["comm_jitter"].is_object())
    for (auto& [k, v] : j["comm_jitter"].items())
      if (v.is_number() && v.get<double>() >= 0 && v.get<double>() < 3.2e7)
        e.comm_jitter[std::stoull(k, nullptr, 16)] = v.get<double>();
  // A record publishes 16 communicators of at most 64 stored members (a
  // peer's bytes: more is refused, not trusted).
  if (j.contains("comm_members") && j["comm_members"].is_object())
    for (auto& [k, v] : j["comm_members"].items())
      if (v.is_array()) {
        if (e.comm_members.size() >= 64 || v.size() > 64)
          throw std::invalid_argument("comm_members: at most 64 communicators of 64 members");
        std::vector<int> m;
        for (auto& x : v) m.push_back(common::json_int_at<int>(x));
        e.comm_members[std::stoull(k, nullptr, 16)] = std::move(m);
      }
  e.state_s = j.value("state_s", 0.0);
  if (j.contains("stack") && j["stack"].is_object()) {
    const json& st = j["stack"];
    if (st.contains("frames")) {
      const json& fr = st.at("frames");
      if (!fr.is_array() || fr.size() > kMaxStackFrames)
        throw std::invalid_argument(fmt::format("stack.frames: expected an array of at most {} names", kMaxStackFrames));
      for (auto& f : fr) e.stack.push_back(f.get<std::string>().substr(0, kMaxFrameChars));
    } else {
      e.stack_error = st.at("error").get<std::string>().substr(0, 256);
    }
  }
  if (j.contains("sched") && j["sched"].is_object()) {
    const json& sc = j["sched"];
    e.cpu_ns = common::json_int<long long>(sc, "cpu_ns");
    e.runq_ns = common::json_int<long long>(sc, "runq_ns");
    e.sched_at_ns = common::json_int<std::int64_t>(sc, "at_ns");
    if (e.cpu_ns < 0 || e.runq_ns < 0 || e.sched_at_ns <= 0)
      throw std::invalid_argument("sched: expected non-negative cpu_ns and runq_ns and a positive at_ns");
    if (sc.contains("coll_in_ns")) {
      e.coll_in_ns = common::json_int<long long>(sc, "coll_in_ns");
      if (e.coll_in_ns < 0) throw std::invalid_argument("sched.coll_in_ns: expected a non-negative count of nanoseconds");
    }
    if (sc.contains("cpu_khz")) {
      e.cpu_khz = common::json_int<long>(sc, "cpu_khz");
      if (e.cpu_khz <= 0 || e.cpu_khz >= 100'000'000) throw std::invalid_argument("sched.cpu_khz: expected a clock in kHz, 1 to 99999999");
    }
  }
  e.dead_s = j.value("dead_s", 0.0);
  if (!std::isfinite(e.dead_s) || e.dead_s < 0)
    throw std::invalid_argument("dead_s: expected a non-negative number of seconds");
  if (j.contains("died_on_stop")) {
    if (!j["died_on_stop"].is_boolean()) throw std::invalid_argument("died_on_stop: expected true or false");
    e.died_on_stop = j["died_on_stop"].get<bool>();
  }
  if (j.contains("p2p") && j["p2p"].is_object()) {
    const json& p = j["p2p"];
    e.p2p_ops = common::json_int<std::uint64_t>(p, "ops");
    e.p2p_call = p.at("call").get<std::string>().substr(0, 32);
    e.p2p_wait_s = p.at("wait_s").get<double>();
    for (auto& x : p.at("peers")) {
      if (e.p2p_peers.size() >= 64) break;
      e.p2p_peers.push_back(common::json_int_at<int>(x));
    }
    e.p2p_more = p.at("more").get<bool>();
    e.p2p_comm = std::stoull(p.at("comm").get<std::string>(), nullptr, 16);
    e.p2p_any_comm = std::stoull(p.at("any_comm").get<std::string>(), nullptr, 16);
    if (p.contains("tag")) {
      // MPI tags are non-negative ints (MPI_TAG_UB at least 32767)
      if (!p["tag"].is_number_integer() || p["tag"].get<std::int64_t>() < 0 ||
          p["tag"].get<std::int64_t>() > 0x7fffffff)
        throw std::invalid_argument("p2p.tag: expected an MPI tag (0 to 2147483647)");
      e.p2p_tag = p["tag"].get<std::int64_t>();
    }
    if (p.contains("dirs")) {
      const std::string d = p["dirs"].is_string() ? p["dirs"].get<std::string>() : std::string("\x01");
      if (d.size() > e.p2p_peers.size() || d.find_first_not_of("rsb?") != std::string::npos)
        throw std::invalid_argument("p2p.dirs: expected one of r, s, b or ? per listed peer");
      e.p2p_dirs = d;
    }
    if (p.contains("tags")) {
      // Per listed peer (where dirs says which way), -2 none, -1 several.
      const json& t = p["tags"];
      auto take = [&](const char* way, std::vector<std::int32_t>& out) {
        if (!t.is_object() || !t.contains(way) || !t[way].is_array() || t[way].size() != e.p2p_dirs.size() ||
            e.p2p_dirs.empty())
          throw std::invalid_argument("p2p.tags: expected {\"recv\": [...], \"send\": [...]}, one tag per peer of p2p.dirs");
        for (auto& x : t[way]) {
          if (!x.is_number_integer() || x.get<std::int64_t>() < -2 || x.get<std::int64_t>() > 0x7fffffff)
            throw std::invalid_argument("p2p.tags: expected MPI tags (0 to 2147483647), -1 (several) or -2 (none)");
          out.push_back(static_cast<std::int32_t>(x.get<std::int64_t>()));
        }
      };
      take("recv", e.p2p_recv_tags);
      take("send", e.p2p_send_tags);
      // Where dirs says a request goes, a tag; where it says none, -2.
      for (std::size_t k = 0; k < e.p2p_dirs.size(); ++k) {
        const char d = e.p2p_dirs[k];
        const bool r = d == 'r' || d == 'b', w = d == 's' || d == 'b';
        if (r != (e.p2p_recv_tags[k] != -2) || w != (e.p2p_send_tags[k] != -2))
          throw std::invalid_argument(fmt::format(
              "p2p.tags: peer {} has dirs '{}' but receive tag {} and send tag {}; expected a tag (or -1) for each "
              "way dirs names, -2 for the others",
              k, d, e.p2p_recv_tags[k], e.p2p_send_tags[k]));
      }
    }
  }
  if (j.contains("end") && j["end"].is_object()) {
    const json& x = j["end"];
    e.end_kind = x.at("kind").get<std::string>().substr(0, 16);
    e.end_code = common::json_int<long long>(x, "code");
    e.end_addr = std::stoull(x.at("addr").get<std::string>(), nullptr, 16);
    e.end_ns = common::json_int<std::int64_t>(x, "ns");
    e.end_seq = common::json_int<std::uint64_t>(x, "seq");
    if (x.contains("age_s")) {  // (absent from an older observer's evidence: unknown)
      if (!x["age_s"].is_number() || !std::isfinite(x["age_s"].get<double>()) || x["age_s"].get<double>() < 0)
        throw std::invalid_argument("end.age_s: expected a non-negative number of seconds");
      e.end_age_s = x["age_s"].get<double>();
    }
    if (x.contains("call")) e.end_call = x.at("call").get<std::string>().substr(0, 32);
    if (x.contains("on_stop")) {
      if (!x["on_stop"].is_boolean()) throw std::invalid_argument("end.on_stop: expected true or false");
      e.ended_on_stop = x["on_stop"].get<bool>();
    }
    if (e.end_kind == "mpi_error" && e.end_addr > c3::kMpiErrorClassCount)
      throw std::invalid_argument("end.addr: an MPI error's class index is at most the standard classes' count");
  }
  if (j.contains("gpu") && j["gpu"].is_object()) {
    const json& g = j["gpu"];
    e.gpu.present = true;
    e.gpu.bus_id = g.at("bus_id").get<std::string>().substr(0, 31);
    e.gpu.device = common::json_int<int>(g, "device");
    e.gpu.tracking = g.at("tracking").get<bool>();
    e.gpu.started = common::json_int<std::uint64_t>(g, "started");
    e.gpu.done = common::json_int<std::uint64_t>(g, "done");
    e.gpu.idle_s = g.at("idle_s").get<double>();
    e.gpu.captured = common::json_int<std::uint64_t>(g, "captured");
    e.gpu.untracked = common::json_int<std::uint64_t>(g, "untracked");
    if (e.gpu.done > e.gpu.started) throw std::invalid_argument("gpu: done exceeds started");
    if (g.contains("comms") && g["comms"].is_array())
      for (auto& x : g["comms"]) {
        if (e.gpu.comms.size() >= 16) break;
        if (!x.is_array() || x.size() != 4) continue;
        RankEvidence::Gpu::CommOps c;
        c.id = std::stoull(x[0].get<std::string>(), nullptr, 16);
        c.issued = common::json_int_at<std::uint64_t>(x[1]);
        c.begun = common::json_int_at<std::uint64_t>(x[2]);
        c.done = common::json_int_at<std::uint64_t>(x[3]);
        if (c.done > c.begun) throw std::invalid_argument("gpu: a communicator's done exceeds begun");
        e.gpu.comms.push_back(c);
      }
  }
  if (j.contains("threads") && j["threads"].is_object()) {
    // A peer's bytes: bounded lists, counts that can be, finite seconds.
    const json& t = j["threads"];
    auto secs = [](const json& v, const char* what) {
      const double d = v.get<double>();
      if (!(d >= 0 && d < 3.2e7)) throw std::invalid_argument(fmt::format("threads: {} must be in [0, 3.2e7) s", what));
      return d;
    };
    e.threaded = true;
    e.threads_full = common::json_int<std::uint64_t>(t, "full");
    e.comms_full = common::json_int_or<std::uint64_t>(t, "comms_full", 0);
    auto kind_ok = [](std::uint32_t k) { return (k & 0xff) < 32 && (k & ~0x1ffu) == 0; };
    for (auto& x : t.at("comms")) {
      if (e.comm_progress.size() >= kMaxProgressComms) throw std::invalid_argument("threads: more communicators than 32");
      if (!x.is_array() || x.size() != 6) throw std::invalid_argument("threads: a communicator is [id, entered, completed, fingerprint, kind, since_s]");
      RankEvidence::CommProgress c;
      c.id = std::stoull(x[0].get<std::string>(), nullptr, 16);
      c.entered = common::json_int_at<std::uint64_t>(x[1]);
      c.completed = common::json_int_at<std::uint64_t>(x[2]);
      c.fingerprint = std::stoull(x[3].get<std::string>(), nullptr, 16);
      c.kind = common::json_int_at<std::uint32_t>(x[4]);
      c.since_s = secs(x[5], "since_s");
      if (c.completed > c.entered) throw std::invalid_argument("threads: a communicator completed more than it entered");
      if (c.id == 0 || !kind_ok(c.kind)) throw std::invalid_argument("threads: a communicator without identity or of an unknown kind");
      for (auto& o : e.comm_progress)
        if (o.id == c.id) throw std::invalid_argument("threads: a communicator listed twice");
      e.comm_progress.push_back(c);
    }
    for (auto& x : t.at("threads")) {
      if (e.threads.size() >= kMaxThreads) throw std::invalid_argument("threads: more threads than 16");
      RankEvidence::Thread th;
      th.tid = common::json_int<long>(x, "tid");
      if (x.contains("collective")) {
        const json& c = x.at("collective");
        th.coll_kind = common::json_int<std::uint32_t>(c, "kind");
        if (!kind_ok(th.coll_kind)) throw std::invalid_argument("threads: a collective of an unknown kind");
        th.coll_comm = std::stoull(c.at("comm").get<std::string>(), nullptr, 16);
        th.coll_ordinal = common::json_int<std::uint64_t>(c, "ordinal");
        th.coll_s = secs(c.at("s"), "a collective's seconds");
      }
      if (x.contains("p2p")) {
        const json& p = x.at("p2p");
        th.p2p_call = p.at("call").get<std::string>().substr(0, 32);
        th.p2p_wait_s = secs(p.at("wait_s"), "a wait's seconds");
        for (auto& r : p.at("peers")) {
          if (th.p2p_peers.size() >= 8) break;
          th.p2p_peers.push_back(common::json_int_at<int>(r));
        }
        th.p2p_comm = std::stoull(p.at("comm").get<std::string>(), nullptr, 16);
      }
      e.threads.push_back(std::move(th));
    }
  }
  if (j.contains("peers") && j["peers"].is_array())
    for (auto& x : j["peers"]) {
      if (e.peers.size() >= 256) break;
      if (!x.is_array() || (x.size() != 7 && x.size() != 8)) continue;
      RankEvidence::Peer p;
      p.sent = common::json_int_at<std::uint64_t>(x[1]);
      p.recvd = common::json_int_at<std::uint64_t>(x[2]);
      p.sent_bytes = common::json_int_at<std::uint64_t>(x[3]);
      p.recvd_bytes = common::json_int_at<std::uint64_t>(x[4]);
      p.waits = common::json_int_at<std::uint64_t>(x[5]);
      // Seconds a rank waited: finite, not negative, under a year (a peer's
      // evidence is checked, never trusted; inf would poison every median).
      auto secs = [](const json& v) {
        const double d = v.get<double>();
        if (!(d >= 0 && d < 3.2e7)) throw std::invalid_argument("peers: wait seconds must be in [0, 3.2e7)");
        return d;
      };
      p.wait_s = secs(x[6]);
      if (x.size() == 8) p.send_wait_s = secs(x[7]);
      e.peers[common::json_int_at<int>(x[0])] = p;
    }
  if (j.contains("outsigs") && j["outsigs"].is_array())
    for (auto& o : j["outsigs"])
      if (o.is_array() && o.size() == 4)
        e.outsigs.push_back({std::stoull(o[0].get<std::string>(), nullptr, 16), common::json_int_at<std::uint64_t>(o[1]),
                             common::json_int_at<std::uint64_t>(o[2]), std::stoull(o[3].get<std::string>(), nullptr, 16)});
}

}  // namespace scout::scoutd
