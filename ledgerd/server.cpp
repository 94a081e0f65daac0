// scout-ledgerd's TCP server (see server.hpp). Everything a session counts
// lives in Server::Shared and is touched on the io thread only (the refused
// counters under their lock, the connection count atomic for /metrics); the
// workers touch the service, the credentials and those counters, and hand
// their answer back to the io thread.
#include "ledgerd/server.hpp"

#include <boost/asio/post.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "common/log.hpp"

namespace scout::ledgerd {

namespace asio = boost::asio;
using asio::ip::tcp;
using nlohmann::json;

namespace {
std::chrono::milliseconds ms(double s) { return std::chrono::milliseconds(static_cast<long>(s * 1000)); }

// Every line the server writes: never throws on invalid UTF-8 (a byte the
// service quoted from a request becomes U+FFFD).
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
}  // namespace

ServerCredentials ServerCredentials::munge() {
  ServerCredentials c;
  c.open = [](const std::string& line, std::string& why) { return munge_decode_credential(line, why); };
  c.seal = [](const std::string& payload, uid_t requester) { return munge_encode_payload(payload, requester); };
  return c;
}

// Where a connection stands: silent (no line yet: the oldest is pushed out
// for a newcomer), first request (its line is being answered: counted as
// unauthenticated, never pushed out), authenticated (kept), released (its
// slot given back: closed, evicted, or the server is gone).
enum class Slot { kSilent, kFirstRequest, kAuthenticated, kReleased };

struct Server::Shared {
  Shared(Service& s, ServerLimits l, ServerCredentials c)
      : service(s), limits(l), credentials(std::move(c)),
        authenticated_capacity(l.max_connections - l.max_unauthenticated) {}
  Service& service;  // workers only: the pool is joined before the Server goes
  const ServerLimits limits;
  const ServerCredentials credentials;
  const int authenticated_capacity;

  // io thread only.
  asio::thread_pool* pool = nullptr;  // null once the Server is gone
  int unauthenticated = 0, authenticated = 0;
  struct Peer {
    int unauthenticated = 0, authenticated = 0;
  };
  std::map<std::string, Peer> peers;  // by address
  std::list<Session*> all;            // every session holding a slot, oldest first
  std::list<Session*> silent;         // the silent ones, oldest first
  std::chrono::steady_clock::time_point last_warning{};
  std::uint64_t unlogged = 0;

  std::atomic<int> connections{0};
  mutable std::mutex refused_mu;
  std::map<std::string, std::uint64_t> refused;

  void count_refused(const char* reason) {  // any thread; a fixed label
    std::lock_guard<std::mutex> g(refused_mu);
    ++refused[reason];
  }
  // For what a client can repeat at will (evictions, refusals at accept):
  // at most one line a second, the rest counted in the next one.
  void warn_limited(const std::string& msg) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_warning < std::chrono::seconds(1)) {
      ++unlogged;
      return;
    }
    last_warning = now;
    if (unlogged) log::warning("{} (and {} like it not logged)", msg, std::exchange(unlogged, 0));
    else log::warning("{}", msg);
  }
  void enter(Session* s);
  void heard(Session* s);
  const char* authenticate(Session* s);
  void release(Session* s);
  Session* oldest_silent(const std::string* address) const;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  using Shared = Server::Shared;
  Session(tcp::socket s, std::shared_ptr<Shared> shared, std::string address)
      : socket_(std::move(s)), shared_(std::move(shared)), timer_(socket_.get_executor()),
        buf_(kMaxRequestBytes + 2), address_(std::move(address)), since_(std::chrono::steady_clock::now()) {
    boost::system::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    peer_ = ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
    shared_->enter(this);
  }
  ~Session() { shared_->release(this); }

  void start() { read(); }

  // Closes the connection and gives its slot back (idempotent).
  void close() {
    boost::system::error_code ignore;
    socket_.shutdown(tcp::socket::shutdown_both, ignore);
    socket_.close(ignore);
    shared_->release(this);
  }
  // Pushed out for a newcomer: told why (without blocking), then closed.
  void evict(const std::string& line) {
    boost::system::error_code ignore;
    socket_.non_blocking(true, ignore);
    socket_.write_some(asio::buffer(line), ignore);
    close();
  }
  const std::string& peer() const { return peer_; }
  double age_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
  }

 private:
  friend struct Server::Shared;

  // One timer, re-armed for each phase: waiting for a line (the first
  // request, then idle), the worker's answer, and each write. Each arming
  // has a number: an expiry already queued when the phase ended (cancel
  // comes too late for it) finds a newer number and does nothing.
  enum class Phase { kFirst, kIdle, kRequest, kWrite };
  void arm(Phase phase) {
    const auto& l = shared_->limits;
    const std::uint64_t armed = ++armed_;
    timer_.expires_after(ms(phase == Phase::kFirst     ? l.first_request_s
                            : phase == Phase::kIdle    ? l.idle_timeout_s
                            : phase == Phase::kRequest ? l.request_timeout_s
                                                       : l.write_timeout_s));
    timer_.async_wait([self = shared_from_this(), phase, armed](boost::system::error_code ec) {
      if (ec || armed != self->armed_ || self->slot_ == Slot::kReleased) return;
      self->expired(phase);
    });
  }
  void disarm() {
    ++armed_;
    timer_.cancel();
  }

  void expired(Phase phase) {
    const auto& l = shared_->limits;
    if (phase == Phase::kRequest) {
      if (answered_) return;
      // The worker did not answer (munged, scontrol or SQLite stuck).
      shared_->count_refused("timeout");
      log::warning("{}: request not answered within {:g} s; connection closed", peer_, l.request_timeout_s);
      answered_ = true;
      write(json{{"ok", false}, {"refused", "timeout"},
                 {"error", fmt::format("scout-ledgerd could not answer within {:g} s (munged, Slurm or the "
                                       "site ledger is slow); try again", l.request_timeout_s)}},
            true);
      return;
    }
    if (phase == Phase::kFirst) shared_->count_refused("no_request");
    close();
  }

  void read() {
    arm(served_ ? Phase::kIdle : Phase::kFirst);
    asio::async_read_until(socket_, buf_, '\n', [self = shared_from_this()](boost::system::error_code ec,
                                                                            std::size_t n) { self->on_line(ec, n); });
  }

  void on_line(boost::system::error_code ec, std::size_t n) {
    disarm();
    if (slot_ == Slot::kReleased) return;  // evicted, timed out, or the server is gone
    if (ec == asio::error::not_found) {
      shared_->count_refused("too_large");
      log::warning("{}: request longer than {} bytes refused; connection closed", peer_, kMaxRequestBytes);
      write(json{{"ok", false}, {"refused", "too_large"},
                 {"error", fmt::format("request line longer than {} bytes", kMaxRequestBytes)}},
            true);
      return;
    }
    if (ec) {  // the client closed, or a network error
      close();
      return;
    }
    std::string line(asio::buffers_begin(buf_.data()), asio::buffers_begin(buf_.data()) + static_cast<long>(n));
    buf_.consume(n);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (slot_ == Slot::kSilent) shared_->heard(this);
    asio::thread_pool* pool = shared_->pool;
    if (!pool) {
      close();
      return;
    }
    answered_ = false;
    arm(Phase::kRequest);
    // MUNGE and the service on a worker; the answer comes back to the io
    // thread, unless the deadline answered first. The worker keeps no
    // reference once it posted the answer: the session ends on the io
    // thread (or with the io_context), never on a worker.
    asio::post(*pool, [self = shared_from_this(), io = socket_.get_executor(), line = std::move(line)]() mutable {
      Answer a = self->work(line);
      asio::post(io, [self = std::move(self), a = std::move(a)]() mutable { self->answer(std::move(a)); });
    });
  }

  // What a worker made of one request line.
  struct Answer {
    bool ok = false;             // a valid credential, and the service said ok
    std::string line;            // to send: sealed, or the server's plain JSON
    std::string log;             // a refusal to log on the io thread
  };

  // On a worker: touches only the credentials, the service, the limits and
  // the refused counters. Never throws (an exception would end the pool).
  Answer work(const std::string& line) const noexcept {
    Answer a;
    try {
      const Shared& sh = *shared_;
      std::string why;
      auto d = sh.credentials.open(line, why);
      if (!d) {
        shared_->count_refused("credential");
        a.log = fmt::format("{}: request refused: {}", peer_, why);
        a.line = dump(json{{"ok", false}, {"refused", "credential"}, {"error", why}});
        return a;
      }
      json reply = sh.service.handle({d->uid, d->gid}, d->payload);
      std::string text = dump(reply);
      if (text.size() > sh.limits.max_reply_bytes) {
        // MUNGE would refuse to seal it, or a client to read it: say so,
        // sealed, with the request's nonce, instead of trying.
        shared_->count_refused("too_large_reply");
        a.log = fmt::format("{}: uid {}: reply of {} bytes refused (too_large_reply, at most {})", peer_, d->uid,
                            text.size(), sh.limits.max_reply_bytes);
        json refusal{{"ok", false},
                     {"refused", "too_large_reply"},
                     {"error", fmt::format("the reply would be {} bytes, over the {} bytes one reply may carry "
                                           "(MUNGE seals at most 1 MiB); ask for less at a time (page the "
                                           "request)",
                                           text.size(), sh.limits.max_reply_bytes)}};
        if (auto it = reply.find("nonce"); it != reply.end()) refusal["nonce"] = *it;
        reply = std::move(refusal);
        text = dump(reply);
      } else if (!reply.value("ok", false)) {
        a.log = fmt::format("{}: uid {}: request refused ({}): {}", peer_, d->uid, reply.value("refused", "?"),
                            reply.value("error", ""));
      }
      a.ok = reply.value("ok", false);
      // The reply is the service's MUNGE credential, decodable by the
      // requester alone: a client believes no one else.
      try {
        a.line = sh.credentials.seal(text, d->uid);
      } catch (const std::exception& e) {
        shared_->count_refused("internal");
        a.ok = false;
        a.log = fmt::format("{}: uid {}: reply not sealed: {}", peer_, d->uid, e.what());
        a.line = dump(json{{"ok", false}, {"refused", "internal"}, {"error", std::string("reply: ") + e.what()}});
      }
    } catch (const std::exception& e) {
      shared_->count_refused("internal");
      a.ok = false;
      a.log = std::string("request failed: ") + e.what();
      a.line = R"({"ok":false,"refused":"internal","error":"scout-ledgerd failed to answer; see its log"})";
    } catch (...) {
      a.ok = false;
      a.line = R"({"ok":false,"refused":"internal","error":"scout-ledgerd failed to answer; see its log"})";
    }
    return a;
  }

  void answer(Answer a) {
    if (answered_ || slot_ == Slot::kReleased) return;  // the deadline answered first, or closed
    answered_ = true;
    disarm();
    if (!a.log.empty()) log::warning("{}", a.log);
    // The first refused line closes the connection: a client that sends
    // garbage, or asks what it may not, holds no slot.
    bool close = !a.ok;
    if (a.ok && slot_ == Slot::kFirstRequest) {
      if (const char* full = shared_->authenticate(this)) {
        // Answered all the same; the connection is not kept.
        close = true;
        shared_->count_refused(full);
        shared_->warn_limited(fmt::format(
            "{}: answered, connection not kept ({}: {} authenticated connections{})", peer_, full,
            shared_->authenticated,
            std::string(full) == "busy_peer" ? fmt::format(", {} from {}", shared_->limits.max_per_peer, address_)
                                             : std::string()));
      }
    }
    if (a.ok) served_ = true;
    write_line(std::move(a.line), close);
  }

  // A plain JSON line: the server's own refusals, before anyone is known
  // (clients take them as "no answer", never as the service's word).
  void write(const json& reply, bool close) { write_line(dump(reply), close); }

  void write_line(std::string line, bool close) {
    out_ = std::move(line);
    out_ += '\n';
    arm(Phase::kWrite);
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this(), close](boost::system::error_code ec, std::size_t) {
                        self->disarm();
                        if (ec || close || self->slot_ == Slot::kReleased) {
                          self->close();
                          return;
                        }
                        self->read();
                      });
  }

  tcp::socket socket_;
  std::shared_ptr<Shared> shared_;
  asio::steady_timer timer_;
  asio::streambuf buf_;
  std::string out_, peer_, address_;
  std::chrono::steady_clock::time_point since_;
  Slot slot_ = Slot::kSilent;
  std::list<Session*>::iterator in_all_, in_silent_;
  std::uint64_t armed_ = 0;
  bool served_ = false;    // a request was answered ok: idle timeout from now on
  bool answered_ = false;  // the current request has its reply (worker or deadline)
};

void Server::Shared::enter(Session* s) {
  ++connections;
  ++unauthenticated;
  ++peers[s->address_].unauthenticated;
  s->in_all_ = all.insert(all.end(), s);
  s->in_silent_ = silent.insert(silent.end(), s);
  s->slot_ = Slot::kSilent;
}

void Server::Shared::heard(Session* s) {
  if (s->slot_ != Slot::kSilent) return;
  silent.erase(s->in_silent_);
  s->slot_ = Slot::kFirstRequest;
}

const char* Server::Shared::authenticate(Session* s) {
  if (s->slot_ != Slot::kFirstRequest) return nullptr;
  Peer& p = peers[s->address_];
  if (authenticated >= authenticated_capacity) return "busy";
  if (p.authenticated >= limits.max_per_peer) return "busy_peer";
  --unauthenticated;
  --p.unauthenticated;
  ++authenticated;
  ++p.authenticated;
  s->slot_ = Slot::kAuthenticated;
  return nullptr;
}

void Server::Shared::release(Session* s) {
  if (s->slot_ == Slot::kReleased) return;
  auto it = peers.find(s->address_);
  if (s->slot_ == Slot::kAuthenticated) {
    --authenticated;
    if (it != peers.end()) --it->second.authenticated;
  } else {
    if (s->slot_ == Slot::kSilent) silent.erase(s->in_silent_);
    --unauthenticated;
    if (it != peers.end()) --it->second.unauthenticated;
  }
  if (it != peers.end() && it->second.unauthenticated <= 0 && it->second.authenticated <= 0) peers.erase(it);
  all.erase(s->in_all_);
  --connections;
  s->slot_ = Slot::kReleased;
}

Session* Server::Shared::oldest_silent(const std::string* address) const {
  for (Session* s : silent)
    if (!address || s->address_ == *address) return s;
  return nullptr;
}

Server::Server(asio::io_context& io, const Endpoint& listen, Service& service, ServerLimits limits,
               ServerCredentials credentials)
    : io_(io), acceptor_(io),
      shared_(std::make_shared<Shared>(service, effective_limits(limits), std::move(credentials))),
      pool_(static_cast<std::size_t>(shared_->limits.workers)) {
  shared_->pool = &pool_;
  listen_on(acceptor_, listen, 0);
  accept();
}

// Sessions can outlive the Server: their handlers, and a worker's answer
// posted to an io_context that no longer runs, are destroyed with the
// io_context, after the Server. So: no new work, every session closed and
// its slot given back here, the pool joined (a worker still answering a
// timed-out request finishes with the Server and the service alive), and
// what the sessions touch afterwards (Shared) lives as long as they do.
Server::~Server() {
  boost::system::error_code ignore;
  acceptor_.close(ignore);
  shared_->pool = nullptr;
  while (!shared_->all.empty()) shared_->all.front()->close();
  pool_.stop();
  pool_.join();
}

std::map<std::string, std::uint64_t> Server::refused() const {
  std::lock_guard<std::mutex> g(shared_->refused_mu);
  return shared_->refused;
}

int Server::connections() const { return shared_->connections.load(); }

void Server::accept() {
  acceptor_.async_accept([this, sh = shared_](boost::system::error_code ec, tcp::socket s) {
    if (!sh->pool) return;  // the Server is gone (its acceptor closed)
    if (!ec) {
      admit(std::move(s));
    } else if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
               ec == asio::error::no_memory) {
      // EMFILE/ENFILE/ENOBUFS: back off instead of spinning on accept.
      log::warning("accept: {}; backing off 100 ms", ec.message());
      auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      t->async_wait([this, t, sh = shared_](boost::system::error_code) {
        if (sh->pool) accept();  // not after the Server is gone
      });
      return;
    }
    if (ec != asio::error::operation_aborted) accept();
  });
}

void Server::admit(tcp::socket s) {
  Shared& sh = *shared_;
  const ServerLimits& l = sh.limits;
  boost::system::error_code aec;
  const auto ep = s.remote_endpoint(aec);
  const std::string address = aec ? std::string("?") : ep.address().to_string();
  auto refuse = [&](const char* reason, const std::string& error) {
    sh.count_refused(reason);
    const std::string msg = dump(json{{"ok", false}, {"refused", reason}, {"error", error}}) + "\n";
    boost::system::error_code ignore;
    s.non_blocking(true, ignore);
    s.write_some(asio::buffer(msg), ignore);  // never blocks the io thread
  };
  const auto it = sh.peers.find(address);
  const int from_peer = it == sh.peers.end() ? 0 : it->second.unauthenticated;
  const bool peer_full = from_peer >= l.max_unauthenticated_per_peer;
  if (peer_full || sh.unauthenticated >= l.max_unauthenticated) {
    // The pool of connections without a credential is full: the oldest
    // silent one (of this address when it is the address's share that is
    // full) makes room, so re-opening connections starves no newcomer.
    Session* victim = sh.oldest_silent(peer_full ? &address : nullptr);
    const std::string pool = peer_full ? fmt::format("{} from {}", from_peer, address)
                                       : fmt::format("{} in all", sh.unauthenticated);
    if (!victim) {
      refuse("unauthenticated_full",
             fmt::format("{} connections without a credential, each with its request being answered; try again",
                         pool));
      sh.warn_limited(fmt::format("{}: refused: {} connections without a credential, none silent "
                                  "(unauthenticated_full)", address, pool));
      return;
    }
    sh.count_refused("unauthenticated_evicted");
    sh.warn_limited(fmt::format("{}: no request after {:.1f} s, closed for a newcomer from {} ({} connections "
                                "without a credential; unauthenticated_evicted)",
                                victim->peer(), victim->age_s(), address, pool));
    victim->evict(dump(json{{"ok", false},
                            {"refused", "unauthenticated_evicted"},
                            {"error", "no request came while others waited for a connection; closed"}}) +
                  "\n");
  }
  if (sh.connections >= l.max_connections) {  // cannot happen: the pools add up to max_connections
    refuse("busy", fmt::format("{} connections open; try again", sh.connections.load()));
    return;
  }
  std::make_shared<Session>(std::move(s), shared_, address)->start();
}

}  // namespace scout::ledgerd
