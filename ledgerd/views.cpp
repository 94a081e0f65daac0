// JSON views of the site ledger (see views.hpp).
#include "ledgerd/views.hpp"

namespace scout::ledgerd {

using nlohmann::json;

json nodes_json(sql::Ledger& ledger) {
  json out = json::array();
  for (auto& n : ledger.node_summaries(sql::now_iso8601()))
    out.push_back({{"node", n.node}, {"open_verdicts", n.open}, {"verdicts_7d", n.verdicts_7d},
                   {"verdicts_30d", n.verdicts_30d}, {"drains_7d", n.drains_7d}, {"drains_30d", n.drains_30d},
                   {"last_decision", n.last_decision.empty() ? json(nullptr) : json(n.last_decision)},
                   {"last_decided_at", n.last_decided_at.empty() ? json(nullptr) : json(n.last_decided_at)}});
  return out;
}

}  // namespace scout::ledgerd
