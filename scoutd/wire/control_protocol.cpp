// scoutd control protocol (see control_protocol.hpp).
#include "scoutd/wire/control_protocol.hpp"

#include "common/json_num.hpp"
#include "common/tunables.hpp"
#include "common/untrusted_text.hpp"
#include "scoutd/detect/stack_classes.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <sstream>

#include <fmt/format.h>

namespace scout::scoutd {

using nlohmann::json;

namespace {

std::string printable(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 40)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  if (s.size() > 40) out += "...";
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream is(line);
  std::vector<std::string> w;
  for (std::string t; is >> t;) w.push_back(t);
  return w;
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

ControlReply error(const std::string& msg, bool close = false) {
  return {fmt::format("ERROR: {}\n", msg), close};
}

}  // namespace

namespace {
// Fields of a ledger row are text a user's scoutd wrote: read them by type,
// never assume one, and print control characters escaped.
std::string escaped(const std::string& in) { return escape_text(in); }
}  // namespace

std::string escape_text(const std::string& in) { return common::escape_control(in); }

namespace {
std::string text_of(const json& o, const char* key, const std::string& fallback) {
  if (!o.is_object() || !o.contains(key)) return fallback;
  const json& v = o[key];
  return escaped(v.is_string() ? v.get<std::string>() : common::dump_repairing_utf8(v));
}
long long int_of(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_number_integer() ? o[key].get<long long>() : 0;
}
std::string join(const json& a) {
  if (!a.is_array()) return a.is_null() ? std::string("-") : escaped(common::dump_repairing_utf8(a));
  std::string s;
  for (auto& x : a) {
    if (!s.empty()) s += ",";
    s += escaped(x.is_string() ? x.get<std::string>() : common::dump_repairing_utf8(x));
  }
  return s.empty() ? std::string("-") : s;
}
}  // namespace

std::string render_status_text(const json& s) {
  std::string out = fmt::format("job {} step {} | scoutd {} | observers alive {}/{} | round {}\n",
                                escaped(s.value("job", "?")), escaped(s.value("step", "?")),
                                escaped(s.value("node", "?")),
                                common::json_int_or<long long>(s, "observers_alive", 0), common::json_int_or<long long>(s, "observers", 0),
                                common::json_int_or<long long>(s, "round", 0));
  // The federated learner of each scoutd (scoutctl merges them as
  // "learners"; one scoutd's own reply has "learn").
  json learners = s.contains("learners") && s["learners"].is_array() ? s["learners"] : json::array();
  if (learners.empty() && s.contains("learn") && s["learn"].is_object()) {
    json l = s["learn"];
    l["node"] = s.value("node", "?");
    learners.push_back(l);
  }
  for (auto& l : learners) {
    if (!l.is_object()) continue;
    out += fmt::format("learner {}: round {} | {}{} | threshold {} | {}\n", escaped(text_of(l, "node", "?")),
                       common::json_int_or<long long>(l, "round", 0), escaped(text_of(l, "aggregation", "?")),
                       l.value("personal_memory", false) ? ", own memory" : "",
                       l.contains("threshold") && l["threshold"].is_number() ? fmt::format("{:.4g}", l["threshold"].get<double>()) : "?",
                       l.value("scoring", false) ? "scoring" : "warming up");
  }
  out += fmt::format("{:>6} {:>8} {:>8} {:>7} {:<14} {:>7} {:>9} {:>9} {:>9} {:>7} {:<18}\n", "RANK",
                     "PID", "SEQ", "WAITING", "IN", "IDLE_S", "STEP_MS", "COMPUTE", "WAIT_MS",
                     "SCORE", "PROCESS");
  for (auto& r : s.value("ranks", json::array())) {
    if (!r.value("attached", false)) {
      out += fmt::format("{:>6} {:>8} {:>8} {:>7} {:<14} {:>7} {:>9} {:>9} {:>9} {:>7} {:<18}\n",
                         common::json_int_or<long long>(r, "rank", -1), "-", "-", "-", "-", "-", "-", "-", "-", "-",
                         r.contains("record_invalid") ? "record_invalid: " + escaped(r.value("record_invalid", ""))
                                                      : std::string("not attached"));
      continue;
    }
    std::string proc = r.value("finalized", false) ? "finalized"
                       : !r.value("alive", true)  ? "gone"
                                                  : escaped(r.value("process", "?"));
    const bool timed = common::json_int_or<long long>(r, "steps", 0) > 0;
    auto ms = [&](const char* k) { return timed ? fmt::format("{:.1f}", r.value(k, 0.0) * 1e3) : std::string("-"); };
    std::string score = timed && r.value("score", 0.0) > 0 ? fmt::format("{:.2f}", r.value("score", 0.0)) : "-";
    // IN: the collective, or the point-to-point call it waits in and for whom
    // ("MPI_Recv<-3", "MPI_Waitall<-1,4", "MPI_Recv<-any").
    bool waiting = r.value("in_collective", false);
    std::string in = escaped(r.value("collective", "-"));
    if (r.contains("p2p") && r["p2p"].is_object() && r["p2p"].value("call", "") != "") {
      const json& p = r["p2p"];
      waiting = true;
      in = escaped(p.value("call", "?")) + "<-";
      std::string peers;
      for (auto& x : p.value("peers", json::array())) {
        if (!peers.empty()) peers += ",";
        peers += x.is_number_integer() && x.get<long long>() >= 0 ? std::to_string(x.get<long long>()) : "any";
      }
      in += peers.empty() ? "?" : peers;
      if (p.value("more", false)) in += ",...";
    }
    // An NCCL rank: its GPU and how far the GPU got through what was issued.
    if (r.contains("gpu") && r["gpu"].is_object()) {
      const json& g = r["gpu"];
      const long long began = common::json_int_or<long long>(g, "started", 0), done = common::json_int_or<long long>(g, "done", 0),
                      issued = common::json_int_or<long long>(r, "seq", 0);
      proc += fmt::format(" | GPU {} ", escaped(g.value("bus_id", "?")));
      if (began > done) proc += fmt::format("inside op {}", done + 1);
      else if (issued > done) proc += fmt::format("has not begun op {} ({} queued)", done + 1, issued - done);
      else proc += "idle";
    }
    out += fmt::format("{:>6} {:>8} {:>8} {:>7} {:<14} {:>7.1f} {:>9} {:>9} {:>9} {:>7} {:<18}\n",
                       common::json_int_or<long long>(r, "rank", -1), common::json_int_or<long long>(r, "pid", 0), common::json_int_or<long long>(r, "seq", 0),
                       waiting ? "yes" : "no", in,
                       r.value("stalled_s", 0.0), ms("step_s"), ms("compute_s"), ms("wait_s"), score,
                       proc);
  }
  return out;
}


std::string render_verdicts_text(const json& v) {
  std::string out = fmt::format("{:<4} {:<14} {:<13} {:<10} {:<10} {:<24} {}\n", "ID", "KIND",
                                "STATUS", "RANKS", "HOSTS", "DETECTED", "EVIDENCE");
  if (!v.is_array()) return out;
  for (auto& x : v) {
    if (!x.is_object()) continue;
    std::string status = text_of(x, "status", "?");
    if (x.contains("resolved_at") && !x["resolved_at"].is_null()) status += "*";
    const json e = x.contains("evidence") ? x["evidence"] : json();
    std::string ev = e.is_object() ? text_of(e, "rule", "") : e.is_null() ? "" : text_of(x, "evidence", "");
    if (e.is_object()) {
      if (e.contains("culprits") && e["culprits"].is_array() && !e["culprits"].empty() &&
          e["culprits"][0].is_object() && e["culprits"][0].contains("pid")) {
        const auto& c = e["culprits"][0];
        ev += fmt::format("; pid {} {}", int_of(c, "pid"), text_of(c, "process", ""));
      }
      const std::string src = text_of(e, "source", "");
      if (src == "replay" && e.contains("device"))
        ev += fmt::format("; {} {} cycle {}", text_of(e, "device", "?"), text_of(e, "recipe", "?"), int_of(e, "cycle"));
      else if (src == "replay")
        ev += fmt::format("; {} cycle {}", text_of(e, "recipe", "?"), int_of(e, "cycle"));
      else if (src == "collective_output")
        ev += fmt::format("; {} call {}", text_of(e, "collective", "?"), int_of(e, "call"));
    }
    out += fmt::format("{:<4} {:<14} {:<13} {:<10} {:<10} {:<24} {}\n", int_of(x, "id"), text_of(x, "kind", "?"),
                       status, join(x.contains("ranks") ? x["ranks"] : json()),
                       join(x.contains("hosts") ? x["hosts"] : json()), text_of(x, "detected_at", "?"), ev);
    // What a person reads first, where the rule said it in a sentence
    // (which rank is in which call, at which line, and why that is wrong).
    if (e.is_object() && e.contains("summary") && e["summary"].is_string())
      out += fmt::format("{:<4} {}\n", "", text_of(e, "summary", ""));
  }
  return out;
}

// The classes as STAT's prefix tree, outermost frame first: each line a
// frame and the ranks whose stacks pass through it.
std::string render_stacks_text(const json& s) {
  std::string out = fmt::format("job {} node {}: stacks of {} rank(s)\n", escape_text(text_of(s, "job", "?")),
                                escape_text(text_of(s, "node", "?")),
                                s.contains("ranks") && s["ranks"].is_array() ? s["ranks"].size() : 0);
  const json c = s.value("classes", json());
  if (!c.is_object()) return out;
  struct Node {
    std::string frame;
    std::vector<int> ranks;         // those listed (a class lists its first ranks)
    std::size_t count = 0;          // all of them
    std::vector<std::size_t> kids;  // indices in `tree`, in first-seen order
  };
  std::vector<Node> tree(1);  // tree[0]: the root
  auto ranks_of = [](const json& k) {
    std::vector<int> r;
    for (auto& x : k.value("ranks", json::array())) r.push_back(x.is_number_integer() ? x.get<int>() : -1);
    return r;
  };
  for (auto& k : c.value("classes", json::array())) {
    const std::vector<int> rs = ranks_of(k);
    const json cnt = k.value("count", json());
    const std::size_t count = cnt.is_number_unsigned() ? std::max(cnt.get<std::size_t>(), rs.size()) : rs.size();
    const json frames = k.value("frames", json::array());
    std::size_t n = 0;
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      const std::string f = it->is_string() ? it->get<std::string>() : "?";
      std::size_t next = 0;
      for (std::size_t k : tree[n].kids)
        if (tree[k].frame == f) next = k;
      if (next == 0) {
        tree.push_back({f, {}, 0, {}});
        next = tree.size() - 1;
        tree[n].kids.push_back(next);
      }
      n = next;
      tree[n].ranks.insert(tree[n].ranks.end(), rs.begin(), rs.end());
      tree[n].count += count;
    }
  }
  std::function<void(std::size_t, int)> print = [&](std::size_t n, int depth) {
    for (std::size_t k : tree[n].kids) {
      const Node& kid = tree[k];
      out += fmt::format("{:>{}}{}  [{} rank{}: {}{}]\n", "", 2 * depth, escape_text(kid.frame), kid.count,
                         kid.count == 1 ? "" : "s", rank_list(kid.ranks),
                         kid.count > kid.ranks.size() ? fmt::format(",... ({} more)", kid.count - kid.ranks.size()) : "");
      print(k, depth + 1);
    }
  };
  print(0, 0);
  if (c.contains("text") && c["text"].is_string()) out += "classes: " + escape_text(c["text"].get<std::string>()) + "\n";
  for (auto& u : c.value("untraced", json::array()))
    out += fmt::format("not traced [{}]: {}\n", rank_list(ranks_of(u)), escape_text(text_of(u, "error", "?")));
  return out;
}

ControlReply handle_control_line(ControlState& st, const std::string& raw, const ControlProviders& p) {
  std::string line = raw;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.size() > kMaxLineBytes)
    return error(fmt::format("line too long ({} bytes); expected at most {}", line.size(),
                             kMaxLineBytes), true);
  auto w = words(line);
  if (w.empty()) return error("empty line; expected a command (HELLO, STATUS, VERDICTS, REPLAY, SET FORMAT, QUIT)");
  std::string cmd = upper(w[0]);
  if (cmd == "QUIT") return {"OK\n", true};
  if (cmd == "HELLO") {
    if (w.size() != 2) return error(fmt::format("expected 'HELLO {}'", kProtocolVersion));
    if (w[1] != std::to_string(kProtocolVersion))
      return error(fmt::format("unsupported protocol version '{}'; this scoutd speaks {}",
                               printable(w[1]), kProtocolVersion), true);
    st.greeted = true;
    return {fmt::format("SCOUTD {} job {} node {}\nOK\n", kProtocolVersion, p.job, p.node), false};
  }
  if (!st.greeted)
    return error(fmt::format("expected 'HELLO {}' first, got '{}'", kProtocolVersion,
                             printable(w[0])));
  if (cmd == "SET") {
    if (w.size() == 3 && upper(w[1]) == "FORMAT") {
      std::string f = w[2];
      std::transform(f.begin(), f.end(), f.begin(), ::tolower);
      if (f == "json" || f == "text") {
        st.json = f == "json";
        return {"OK\n", false};
      }
      return error(fmt::format("unknown format '{}'; expected json or text", printable(w[2])));
    }
    return error("expected 'SET FORMAT json' or 'SET FORMAT text'");
  }
  if (cmd == "STATUS" && w.size() == 1) {
    json s = p.status();
    return {(st.json ? common::dump_repairing_utf8(s) + "\n" : render_status_text(s)) + "OK\n", false};
  }
  if (cmd == "VERDICTS" && w.size() == 1) {
    json v = p.verdicts();
    return {(st.json ? common::dump_repairing_utf8(v) + "\n" : render_verdicts_text(v)) + "OK\n", false};
  }
  if (cmd == "TUNE" && w.size() >= 2) {
    if (!p.tune) return error("this scoutd cannot be retuned");
    if (w.size() > 1 + common::kTuneKeys.size()) return error(fmt::format("expected at most {} key=value", common::kTuneKeys.size()));
    std::vector<std::pair<std::string, std::string>> changes;
    common::Tunables check;
    for (std::size_t i = 1; i < w.size(); ++i) {
      std::string k, v, why;
      if (!common::split_assignment(w[i], k, v, &why) || !common::set_tunable(check, k, v, &why)) return error(printable(why));
      changes.emplace_back(k, v);
    }
    const std::string r = p.tune(changes, st.uid);
    if (!r.empty()) return error(r);
    return {st.json ? "{\"tune\":\"queued\"}\nOK\n" : "queued for the deciding observer\nOK\n", false};
  }
  if (cmd == "STACKS" && w.size() == 1) {
    if (!p.stacks) return error("stacks are off for this job (scoutd --stacks off)");
    json s = p.stacks();
    return {(st.json ? common::dump_repairing_utf8(s) + "\n" : render_stacks_text(s)) + "OK\n", false};
  }
  if (cmd == "REPLAY" && w.size() == 1) {
    if (!p.replay) return error("replay is off for this job (scoutd --replay off)");
    std::string r = p.replay();
    if (!r.empty()) return error(r);
    return {st.json ? "{\"replay\":\"requested\"}\nOK\n" : "replay cycle requested\nOK\n", false};
  }
  return error(fmt::format("unknown command '{}'; expected HELLO, STATUS, VERDICTS, STACKS, TUNE key=value, REPLAY, "
                           "SET FORMAT json|text or QUIT", printable(line)));
}

}  // namespace scout::scoutd
