// MUNGE credentials (see munge_auth.hpp).
#include "ledgerd/munge_auth.hpp"

#include <munge.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace scout::ledgerd {

namespace {
struct Ctx {
  munge_ctx_t ctx = munge_ctx_create();
  Ctx() {
    if (const char* s = std::getenv("SCOUT_MUNGE_SOCKET"); s && *s && ctx) munge_ctx_set(ctx, MUNGE_OPT_SOCKET, s);
  }
  ~Ctx() {
    if (ctx) munge_ctx_destroy(ctx);
  }
};
}  // namespace

std::string munge_encode_payload(const std::string& payload, std::optional<uid_t> only_uid) {
  Ctx c;
  if (!c.ctx) throw MungeError("munge: cannot create a context");
  if (only_uid && munge_ctx_set(c.ctx, MUNGE_OPT_UID_RESTRICTION, *only_uid) != EMUNGE_SUCCESS)
    throw MungeError("munge: cannot restrict the credential to uid " + std::to_string(*only_uid));
  char* cred = nullptr;
  const munge_err_t e = munge_encode(&cred, c.ctx, payload.data(), static_cast<int>(payload.size()));
  if (e != EMUNGE_SUCCESS) {
    const char* detail = munge_ctx_strerror(c.ctx);
    throw MungeError(std::string("munge: encode: ") + (detail ? detail : munge_strerror(e)));
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

std::optional<Decoded> munge_decode_credential(const std::string& cred, std::string& why) {
  Ctx c;
  if (!c.ctx) {
    why = "munge: cannot create a context";
    return std::nullopt;
  }
  void* buf = nullptr;
  int len = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  const munge_err_t e = munge_decode(cred.c_str(), c.ctx, &buf, &len, &uid, &gid);
  std::unique_ptr<void, decltype(&std::free)> owned(buf, &std::free);
  if (e != EMUNGE_SUCCESS) {
    const char* detail = munge_ctx_strerror(c.ctx);
    why = std::string("munge: ") + (detail ? detail : munge_strerror(e));
    return std::nullopt;
  }
  Decoded d;
  if (buf && len > 0) d.payload.assign(static_cast<const char*>(buf), static_cast<std::size_t>(len));
  d.uid = uid;
  d.gid = gid;
  return d;
}

}  // namespace scout::ledgerd
