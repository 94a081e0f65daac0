// Per-peer message counters of the probe (see probe_state.hpp), in the
// version-6 part of the rank record: claimed slots, atomic adds when the
// program is threaded. Hot path: no allocation, lock or system call.
#include "probe/probe_state.hpp"

namespace scout::probe {

namespace {

c3::PeerSlot* peer_slot(c3::RecordV6& v6, int world) noexcept {
  if (world < 0) return nullptr;
  const std::uint64_t key = static_cast<std::uint64_t>(world) + 1;
  unsigned s = static_cast<unsigned>(world) % c3::kPeerSlots;
  for (std::size_t i = 0; i < c3::kPeerSlots; ++i, s = (s + 1) % c3::kPeerSlots) {
    c3::PeerSlot& p = v6.peers[s];
    const std::uint64_t have = __atomic_load_n(&p.peer, __ATOMIC_RELAXED);
    if (have == key) return &p;
    if (have == 0) {
      std::uint64_t expected = 0;  // claimed once, by one thread
      if (__atomic_compare_exchange_n(&p.peer, &expected, key, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED) ||
          expected == key)
        return &p;
    }
  }
  __atomic_store_n(&v6.peers_full, __atomic_load_n(&v6.peers_full, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
  return nullptr;
}

inline void bump(std::uint64_t& field, std::uint64_t by) noexcept {
  if (g_threaded) __atomic_fetch_add(&field, by, __ATOMIC_RELAXED);
  else __atomic_store_n(&field, __atomic_load_n(&field, __ATOMIC_RELAXED) + by, __ATOMIC_RELAXED);
}

}  // namespace

// A sent message; `send_wait_ns`: how long a blocking send waited for its
// receiver (Scalasca's late receiver: a rendezvous send to a rank that has
// not posted the receive yet).
void count_sent(c3::RecordV6& v6, int world, std::uint64_t bytes, std::uint64_t send_wait_ns) noexcept {
  if (c3::PeerSlot* p = peer_slot(v6, world)) {
    bump(p->sent, 1);
    bump(p->sent_bytes, bytes);
    if (send_wait_ns) bump(p->send_wait_ns, send_wait_ns);
  }
}

// A received message; `timed`: its wait was measured (wait_ns, possibly 0),
// so it is one sample of how long this rank waits for that peer.
void count_recvd(c3::RecordV6& v6, int world, std::uint64_t bytes, std::uint64_t wait_ns, bool timed) noexcept {
  if (c3::PeerSlot* p = peer_slot(v6, world)) {
    bump(p->recvd, 1);
    bump(p->recvd_bytes, bytes);
    if (timed) {
      if (wait_ns) bump(p->wait_ns, wait_ns);
      bump(p->waits, 1);
    }
  }
}

}  // namespace scout::probe
