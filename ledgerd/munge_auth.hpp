// MUNGE credentials for scout-ledgerd's protocol: a client encodes its
// request as the credential's payload (so the request is authenticated and
// cannot be altered), the service decodes it and learns the uid and gid
// MUNGE certifies. Replayed and expired credentials are refused by munged.
// Wraps libmunge; nothing else in scout calls it.
#pragma once

#include <sys/types.h>

#include <optional>
#include <stdexcept>
#include <string>

namespace scout::ledgerd {

struct MungeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A credential carrying `payload`, from munged (socket: MUNGE's default, or
// $SCOUT_MUNGE_SOCKET); with `only_uid`, only that uid (and root) can decode
// it (MUNGE_OPT_UID_RESTRICTION). Throws MungeError naming what failed.
std::string munge_encode_payload(const std::string& payload, std::optional<uid_t> only_uid = std::nullopt);

struct Decoded {
  std::string payload;
  uid_t uid = 0;
  gid_t gid = 0;
};
// The payload and the certified uid/gid, or an error message (replayed,
// expired, invalid, munged unreachable) in `why`.
std::optional<Decoded> munge_decode_credential(const std::string& cred, std::string& why);

}  // namespace scout::ledgerd
