// The settings a running job can be retuned with (scoutctl set JOB
// key=value): the stall threshold, the straggler factor and confirmations,
// the replay budget, the output-signature period and the learner on/off.
// scoutctl checks a request before sending it; the scoutd that receives it
// checks it again (a client is never trusted); the deciding observer applies
// the requests at a round boundary and every observer adopts the values it
// sends down (scoutd/round/tune_part.cpp). One table: the keys, their
// ranges and their texts are here only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::common {

struct Tunables {
  double stall_threshold_s = 10;
  double straggler_factor = 1.2;
  int straggler_confirmations = 3;
  double replay_budget = 0.01;
  double outsig_period_s = 5;
  bool learn = true;
  std::uint64_t version = 0;  // 0: as started; +1 per applied request
};

struct TuneKey {
  const char* key;
  const char* expected;  // what a value must be, for messages
  const char* help;
};
extern const std::vector<TuneKey> kTuneKeys;
// "stall_threshold, straggler_factor, ..." for messages.
std::string tune_key_list();

// Sets `key` in `t` from its text; false with `why` naming the key and what
// was expected.
bool set_tunable(Tunables& t, const std::string& key, const std::string& value, std::string* why);
// "key=value" -> key, value; false with `why`.
bool split_assignment(const std::string& arg, std::string& key, std::string& value, std::string* why);
// The value of `key` as text ("2", "on").
std::string tunable_text(const Tunables& t, const std::string& key);
// {"stall_threshold": 10, ..., "learn": true, "version": 0}
nlohmann::json tunables_json(const Tunables& t);
// From tunables_json; every key checked; false with `why`.
bool tunables_from_json(const nlohmann::json& j, Tunables& t, std::string* why);

}  // namespace scout::common
