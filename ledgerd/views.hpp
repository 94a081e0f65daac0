// The JSON views of the site ledger that the service sends and scoutctl
// prints from a local ledger file alike (one rendering, two sources).
#pragma once

#include <nlohmann/json.hpp>

#include "sql/ledger.hpp"

namespace scout::ledgerd {

// Every node's summary: open verdicts, 7/30-day verdicts and drains, last decision.
nlohmann::json nodes_json(sql::Ledger& ledger);

}  // namespace scout::ledgerd
