// scoutctl's requests to the site ledger service (see scoutctl.hpp).
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "common/json_num.hpp"
#include "common/untrusted_text.hpp"
#include "cli/scoutctl.hpp"
#include "ledgerd/client.hpp"
#include "ledgerd/site_config.hpp"

namespace scout::cli {

using nlohmann::json;
namespace ld = scout::ledgerd;

[[noreturn]] void die(int code, const std::string& msg) {
  // Escaped: a message may quote a refusal, a path or a name someone else
  // wrote, and root reads it on a terminal.
  std::fprintf(stderr, "scoutctl: %s\n", scout::common::escape_control(msg).c_str());
  std::exit(code);
}

// The ledger service the site configuration names, if any; a malformed
// configuration is a usage error naming the file and line.
std::optional<ld::SiteConfig> configured_ledgerd(const Args& a) {
  try {
    auto site = ld::load_site_config();
    if (site.ledgerd.empty()) return std::nullopt;
    return site;
  } catch (const ld::SiteConfigError& e) {
    die(kExitUsage, fmt::format("{}: {}", a.command, e.what()));
  }
}

// The job's verdicts from scout-ledgerd, or nullopt when none is configured
// or it cannot be reached (then the local files answer, with a warning).
std::optional<json> query_ledgerd(const Args& a) {
  if (!a.ledger.empty()) return std::nullopt;  // --ledger names the file to read
  const auto ep = configured_ledgerd(a);
  if (!ep) return std::nullopt;
  try {
    // The service answers a page at a time ("more", then "after": the
    // last id it sent); the pages together are the job's verdicts.
    json all = json::array();
    bool known = false;
    std::int64_t after = 0;
    for (int page = 0; page < 100000; ++page) {
      ld::LedgerdClient c(*ep);
      json req = {{"op", "query"}, {"job", a.job}};
      if (after > 0) req["after"] = after;
      json r = c.request(req);
      if (!r.value("ok", false)) {
        const std::string why = r.value("refused", "");
        die(why == "unknown_job" ? kExitUnknownJob : why == "not_owner" ? kExitUsage : kExitLedger,
            fmt::format("{}: scout-ledgerd refused: {}", a.command, r.value("error", "?")));
      }
      known = known || r.value("known", false);
      if (r.contains("verdicts") && r["verdicts"].is_array())
        for (auto& v : r["verdicts"]) all.push_back(std::move(v));
      const std::int64_t next = r.contains("after") && r["after"].is_number_integer() ? r["after"].get<std::int64_t>() : 0;
      if (!r.value("more", false) || next <= after) break;
      after = next;
    }
    if (!known && all.empty()) return std::nullopt;  // not there (yet): local files
    return all;
  } catch (const ld::LedgerdError& e) {
    std::fprintf(stderr, "scoutctl: %s: warning: %s; reading the local ledger files\n", a.command.c_str(),
                 scout::common::escape_control(e.what()).c_str());
    return std::nullopt;
  }
}

// node and clear go to the ledger service when the site has one (and no
// --ledger names a file): it keeps the decisions of every node.
std::optional<json> ask_ledgerd(const Args& a, const json& req) {
  if (!a.ledger.empty()) return std::nullopt;
  const auto ep = configured_ledgerd(a);
  if (!ep) return std::nullopt;
  try {
    ld::LedgerdClient c(*ep);
    json r = c.request(req);
    if (!r.value("ok", false)) {
      const std::string why = r.value("refused", "");
      die(why == "not_admin" || why == "malformed" ? kExitUsage : kExitLedger,
          fmt::format("{}: scout-ledgerd refused: {}", a.command, r.value("error", "?")));
    }
    return r;
  } catch (const ld::LedgerdError& e) {
    die(kExitUnreachable, fmt::format("{}: {}", a.command, e.what()));
  }
}

// ping: is the ledger service there, and who am I to it (MUNGE end to end).
int cmd_ping(const Args& a) {
  const auto ep = configured_ledgerd(a);
  if (!ep)
    die(kExitUnreachable, "ping: no ledger service configured (ledgerd = HOST:PORT in /etc/scout/scout.conf or $SCOUT_CONF)");
  const ld::Endpoint& site_ledgerd = ep->ledgerd;
  try {
    ld::LedgerdClient c(*ep);
    json r = c.request({{"op", "ping"}});
    if (!r.value("ok", false)) die(kExitLedger, fmt::format("ping: scout-ledgerd refused: {}", r.value("error", "?")));
    r["ledgerd"] = fmt::format("{}:{}", site_ledgerd.host, site_ledgerd.port);
    if (a.json) std::puts(scout::common::dump_repairing_utf8(r, 2).c_str());
    else
      std::printf("scout-ledgerd at %s: ok, protocol %d; you are uid %d (%s), role %s\n",
                  scout::common::escape_control(r["ledgerd"].get<std::string>()).c_str(),
                  scout::common::json_int_or(r, "v", 0), scout::common::json_int_or(r, "uid", -1),
                  scout::common::escape_control(r.value("user", "?")).c_str(),
                  scout::common::escape_control(r.value("role", "?")).c_str());
    return kExitOk;
  } catch (const ld::LedgerdError& e) {
    die(kExitUnreachable, fmt::format("ping: {}", e.what()));
  }
}

}  // namespace scout::cli
