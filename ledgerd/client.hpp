// The client side of scout-ledgerd's protocol, for scoutctl, scoutd and the
// epilog: a blocking TCP connection with a deadline on every operation; each
// request is sealed in a MUNGE credential of the calling user. Throws
// LedgerdError saying what failed (unreachable, refused, timed out).
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "ledgerd/site_config.hpp"

namespace scout::ledgerd {

struct LedgerdError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class LedgerdClient {
 public:
  LedgerdClient(Endpoint server, double timeout_s = 10);
  ~LedgerdClient();
  LedgerdClient(const LedgerdClient&) = delete;
  LedgerdClient& operator=(const LedgerdClient&) = delete;
  // Sends {"v":1, ...request} and returns the reply object (ok or refused);
  // throws LedgerdError when there is no reply.
  nlohmann::json request(nlohmann::json req);

 private:
  void connect();
  Endpoint server_;
  double timeout_s_;
  int fd_ = -1;
  std::string pending_;
};

}  // namespace scout::ledgerd
