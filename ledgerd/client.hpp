// The client side of scout-ledgerd's protocol, for scoutctl, scoutd and the
// epilog: a blocking TCP connection with a deadline on every operation; each
// request is sealed in a MUNGE credential of the calling user. Throws
// LedgerdError saying what failed (unreachable, refused, timed out).
#pragma once

#include <sys/types.h>

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
  LedgerdClient(Endpoint server, uid_t service_uid, double timeout_s = 10);
  // From the site configuration (the endpoint and ledgerd_user).
  explicit LedgerdClient(const SiteConfig& site, double timeout_s = 10);
  ~LedgerdClient();
  LedgerdClient(const LedgerdClient&) = delete;
  LedgerdClient& operator=(const LedgerdClient&) = delete;
  // Sends {"v":2, "nonce":N, ...request}, sealed in a MUNGE credential only
  // the service's uid (ledgerd_user) can decode, and returns the reply
  // object (ok or refused) once it is a credential of that uid carrying N.
  // Throws LedgerdError when there is no such reply: unreachable, timed
  // out, a plain-text refusal of the server (unauthenticated: a squatter on
  // the port could have written it), or a reply from any other uid.
  nlohmann::json request(nlohmann::json req);

 private:
  void connect();
  nlohmann::json open_reply(const std::string& line, const std::string& nonce);
  // Sends one request line on the open connection and reads its reply.
  nlohmann::json exchange(const std::string& line, const std::string& nonce);
  Endpoint server_;
  uid_t service_uid_;
  double timeout_s_;
  int fd_ = -1;
  std::string pending_;
};

}  // namespace scout::ledgerd
