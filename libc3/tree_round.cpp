// libc3 consensus rounds (see tree_round.hpp for the contract).
#include "libc3/tree_round.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

namespace scout::c3 {

namespace {
constexpr int kTagUp = 0x5C01;
constexpr int kTagDown = 0x5C02;
constexpr int kTagJoin = 0x5C03;  // a member the others lost asks back in

int height_of(int i, int n) {
  int h = 0;
  for (long c = 2L * i + 1; c < n; c = 2 * c + 1) ++h;
  return h;
}
int depth_of(int i) {
  int d = 0;
  for (int k = i + 1; k > 1; k >>= 1) ++d;
  return d;
}
}  // namespace

TreeRound::TreeRound(MPI_Comm parent, Options opt) : opt_(opt) {
  MPI_Comm_dup(parent, &comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &me_);
  MPI_Comm_size(comm_, &size_);
  alive_.resize(static_cast<std::size_t>(size_));
  for (int i = 0; i < size_; ++i) alive_[static_cast<std::size_t>(i)] = i;
  is_lost_.assign(static_cast<std::size_t>(size_), false);
}

TreeRound::~TreeRound() {
  // Requests to dead peers may never complete: cancel what is left, never wait.
  for (auto& s : sends_) {
    int done = 0;
    MPI_Test(&s.req, &done, MPI_STATUS_IGNORE);
    if (!done) {
      MPI_Request_free(&s.req);
      new Bytes(std::move(s.buf));  // MPI may still read it: never freed
    }
  }
  sends_.clear();
  // Freeing the communicator is collective in spirit; with dead members we
  // leave it to MPI_Finalize.
}

std::vector<int> TreeRound::lost() const {
  std::vector<int> out;
  for (int i = 0; i < size_; ++i)
    if (is_lost_[static_cast<std::size_t>(i)]) out.push_back(i);
  return out;
}

int TreeRound::index_of(int world) const {
  auto it = std::lower_bound(alive_.begin(), alive_.end(), world);
  return (it != alive_.end() && *it == world) ? static_cast<int>(it - alive_.begin()) : -1;
}

void TreeRound::send(int dest, int tag, const std::vector<int>& lost, const Bytes& payload) {
  PendingSend ps;
  ps.buf = encode_round_message(round_, lost, payload);
  if (MPI_Isend(ps.buf.data(), static_cast<int>(ps.buf.size()), MPI_BYTE, dest, tag, comm_,
                &ps.req) != MPI_SUCCESS)
    return;  // the peer is gone; its silence will be noticed by deadline
  bytes_sent_ += ps.buf.size();
  ++msgs_sent_;
  sends_.push_back(std::move(ps));
}

void TreeRound::poll_sends() {
  while (!sends_.empty()) {
    int done = 0;
    if (MPI_Test(&sends_.front().req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) done = 1;
    if (!done) break;
    sends_.pop_front();
  }
  // A send that never completes (dead peer) must not pin memory forever.
  while (sends_.size() > 256) {
    MPI_Request_free(&sends_.front().req);
    // MPI may still read the buffer: leak it deliberately (bounded by the
    // number of members that can die).
    new Bytes(std::move(sends_.front().buf));
    sends_.pop_front();
  }
}

bool TreeRound::receive_one() {
  int flag = 0;
  MPI_Message m;
  MPI_Status st;
  if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, &m, &st) != MPI_SUCCESS || !flag)
    return false;
  int len = 0;
  MPI_Get_count(&st, MPI_BYTE, &len);
  Bytes buf(static_cast<std::size_t>(std::max(len, 0)));
  if (MPI_Mrecv(buf.data(), len, MPI_BYTE, &m, MPI_STATUS_IGNORE) != MPI_SUCCESS) return true;
  Msg msg{st.MPI_SOURCE, st.MPI_TAG, 0, {}, {}};
  if (!parse_round_message(buf.data(), buf.size(), msg.round, msg.lost, msg.payload)) {
    ++malformed_;
    return true;  // not ours, or a peer's bytes that do not add up: dropped
  }
  const bool from_lost =
      st.MPI_SOURCE >= 0 && st.MPI_SOURCE < size_ && is_lost_[static_cast<std::size_t>(st.MPI_SOURCE)];
  if (st.MPI_TAG == kTagJoin) {
    // A majority root takes back only members it holds lost; a minority
    // member may form a majority with any that ask (run_minority).
    if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < size_) join_requests_.insert(st.MPI_SOURCE);
    return true;
  }
  if (minority_) {
    // Cut off from the majority: only a down message that names this member
    // as rejoined matters, whatever its round or sender.
    if (st.MPI_TAG == kTagDown &&
        std::find(msg.lost.begin(), msg.lost.end(), -(me_ + 1)) != msg.lost.end())
      inbox_.push_back(std::move(msg));
    return true;
  }
  if (msg.round < round_) return true;  // stale
  if (from_lost) return true;           // a member already declared lost: ignored
  inbox_.push_back(std::move(msg));
  return true;
}

std::optional<TreeRound::Msg> TreeRound::wait_for(int tag, const std::vector<int>& sources,
                                                  Clock::time_point deadline) {
  // A down message of a later round means this member fell behind (its
  // parent died after forwarding its contribution, and it waited out the
  // deadline while the others went on): it takes that result and catches up.
  auto match = [&](const Msg& m) {
    if (m.tag != tag) return false;
    if (tag == kTagDown ? m.round < round_ : m.round != round_) return false;
    return sources.empty() || std::find(sources.begin(), sources.end(), m.source) != sources.end();
  };
  auto sleep = std::chrono::microseconds(20);
  for (;;) {
    for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
      if (match(*it)) {
        Msg m = std::move(*it);
        inbox_.erase(it);
        if (m.round > round_) round_ = m.round;  // caught up
        return m;
      }
    }
    poll_sends();
    bool got = false;
    while (receive_one()) got = true;
    if (got) {
      sleep = std::chrono::microseconds(20);
      continue;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(2000));
  }
}

// A member that sees no strict majority (it was frozen, partitioned, or
// declared lost by the others) decides nothing. It asks every member it
// cannot reach to take it back (at most once a second) and waits one hop for
// a down message that names it as rejoined; then it adopts that message's
// membership and result and is a member again.
RoundResult TreeRound::run_minority(RoundResult& res, Clock::time_point t0, Clock::duration hop) {
  minority_ = true;
  if (Clock::now() - last_join_ >= std::chrono::seconds(1)) {
    last_join_ = Clock::now();
    for (int w = 0; w < size_; ++w)
      if (w != me_) send(w, kTagJoin, {}, Bytes{});
  }
  auto m = wait_for_rejoin(t0 + hop);
  minority_ = false;
  // Minority members that hear each other's JOINs and together are a strict
  // majority form one (the majority can be cut in pieces when several
  // members miss a deadline at once, under load): the lowest of them takes
  // the others back, and becomes their root from the next round on. Members
  // only ask to join while they see no majority, so no member is part of two.
  if (!m) {
    std::vector<int> group{me_};
    for (int w : join_requests_)
      if (w >= 0 && w < size_ && w != me_) group.push_back(w);
    join_requests_.clear();
    std::sort(group.begin(), group.end());
    group.erase(std::unique(group.begin(), group.end()), group.end());
    if (2 * group.size() > static_cast<std::size_t>(size_) && group.front() == me_) {
      std::fill(is_lost_.begin(), is_lost_.end(), true);
      for (int w : group) is_lost_[static_cast<std::size_t>(w)] = false;
      std::vector<int> lost;
      for (int w = 0; w < size_; ++w)
        if (is_lost_[static_cast<std::size_t>(w)]) lost.push_back(w);
      for (int w : group)
        if (w != me_) {
          lost.push_back(-(w + 1));
          res.rejoined.push_back(w);
        }
      for (int w : group)
        if (w != me_) send(w, kTagDown, lost, Bytes{});
      poll_sends();
      alive_ = group;
      res.rejoined.push_back(me_);
      ++round_;
      res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      return res;  // nothing decided this round; a majority again from the next
    }
  }
  if (!m) {
    res.minority = true;
    ++round_;
    res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return res;
  }
  // The root's view: exactly the members its message lists as lost.
  std::fill(is_lost_.begin(), is_lost_.end(), false);
  for (int w : m->lost) {
    if (w >= 0 && w < size_ && w != me_) is_lost_[static_cast<std::size_t>(w)] = true;
    if (w < 0 && -w - 1 < size_) res.rejoined.push_back(-w - 1);
  }
  alive_.clear();
  for (int w = 0; w < size_; ++w)
    if (!is_lost_[static_cast<std::size_t>(w)]) alive_.push_back(w);
  round_ = m->round + 1;
  inbox_.clear();
  res.down = std::move(m->payload);
  res.complete = true;
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

std::optional<TreeRound::Msg> TreeRound::wait_for_rejoin(Clock::time_point deadline) {
  for (;;) {
    poll_sends();
    while (receive_one()) {
    }
    for (auto it = inbox_.begin(); it != inbox_.end(); ++it)
      if (it->tag == kTagDown && std::find(it->lost.begin(), it->lost.end(), -(me_ + 1)) != it->lost.end()) {
        Msg m = std::move(*it);
        inbox_.erase(it);
        return m;
      }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

RoundResult TreeRound::run(const Bytes& up, const Combine& combine, const Decide& decide) {
  RoundResult res;
  const auto t0 = Clock::now();
  const auto hop = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(opt_.hop_timeout_s));
  if (index_of(me_) < 0 || !has_quorum()) return run_minority(res, t0, hop);
  const int n = static_cast<int>(alive_.size());
  const int i = index_of(me_);
  const int height = height_of(i, n);
  const int tree_height = height_of(0, n);
  const int depth = depth_of(i);

  // --- up: gather the children's contributions -----------------------------
  Bytes acc = up;
  std::vector<int> suspects;
  std::vector<int> adopted;  // grandchildren whose parent went silent
  const auto up_deadline = t0 + hop * height;
  for (int c : {2 * i + 1, 2 * i + 2}) {
    if (c >= n) continue;
    const int child = alive_[static_cast<std::size_t>(c)];
    auto m = wait_for(kTagUp, {child}, up_deadline + hop / 2);
    if (m) {
      combine(acc, m->payload);
      suspects.insert(suspects.end(), m->lost.begin(), m->lost.end());
    } else {
      suspects.push_back(child);
      for (int g : {2 * c + 1, 2 * c + 2})
        if (g < n) adopted.push_back(alive_[static_cast<std::size_t>(g)]);
    }
  }
  std::sort(suspects.begin(), suspects.end());
  suspects.erase(std::unique(suspects.begin(), suspects.end()), suspects.end());

  // --- down: the root decides, everyone forwards --------------------------
  std::vector<int> lost;
  std::vector<int> rejoining;
  if (i == 0) {
    // The message down carries every member lost so far (empty in steady
    // state), so a member that skipped a round still converges.
    lost = suspects;
    res.root = true;
    // Only a root that heard from a strict majority of all the members
    // decides. A root made by a stale view (it was frozen, or it is cut off
    // and declared its own root lost) hears from a minority: it decides
    // nothing, and its members go on to ask the majority back in.
    int reached = n;
    for (int w : suspects)
      if (std::binary_search(alive_.begin(), alive_.end(), w)) --reached;
    if (2 * reached > size_) {
      // Members the others had lost and that asked back in rejoin now; the
      // message down names them as -(w+1) so every survivor re-admits them.
      for (int w : join_requests_)
        if (w >= 0 && w < size_ && is_lost_[static_cast<std::size_t>(w)]) rejoining.push_back(w);
      for (int w : rejoining) is_lost_[static_cast<std::size_t>(w)] = false;
      res.down = decide(acc, lost);
      res.complete = true;
    } else {
      res.minority = true;
    }
    for (int w = 0; w < size_; ++w)
      if (is_lost_[static_cast<std::size_t>(w)]) lost.push_back(w);
    for (int w : rejoining) lost.push_back(-(w + 1));
  } else {
    const int parent = alive_[static_cast<std::size_t>((i - 1) / 2)];
    send(parent, kTagUp, suspects, acc);
    const auto down_deadline = t0 + hop * (tree_height + depth + 2);
    auto m = wait_for(kTagDown, {}, down_deadline);
    if (m) {
      lost = m->lost;
      res.down = std::move(m->payload);
      res.complete = true;
    } else {
      lost = {parent};  // the way down broke at the parent: tell the subtree
    }
  }
  for (int c : {2 * i + 1, 2 * i + 2}) {
    if (c >= n) continue;
    const int child = alive_[static_cast<std::size_t>(c)];
    if (!std::binary_search(suspects.begin(), suspects.end(), child))
      send(child, kTagDown, lost, res.complete ? res.down : Bytes{});
  }
  for (int g : adopted) send(g, kTagDown, lost, res.complete ? res.down : Bytes{});
  for (int w : rejoining) send(w, kTagDown, lost, res.down);  // not in this round's tree
  poll_sends();

  // --- apply the membership change ----------------------------------------
  for (int w : lost) {
    if (w < 0 && -w - 1 < size_) {  // rejoined
      const int r = -w - 1;
      if (is_lost_[static_cast<std::size_t>(r)] || std::find(rejoining.begin(), rejoining.end(), r) != rejoining.end()) {
        is_lost_[static_cast<std::size_t>(r)] = false;
        res.rejoined.push_back(r);
      }
      continue;
    }
    if (w < 0 || w >= size_ || is_lost_[static_cast<std::size_t>(w)]) continue;
    if (w == me_) {
      res.expelled = true;
      continue;
    }
    is_lost_[static_cast<std::size_t>(w)] = true;
    res.newly_lost.push_back(w);
  }
  alive_.clear();
  for (int w = 0; w < size_; ++w)
    if (!is_lost_[static_cast<std::size_t>(w)] && !(res.expelled && w == me_)) alive_.push_back(w);
  join_requests_.clear();
  // Drop what is left of this round.
  inbox_.erase(std::remove_if(inbox_.begin(), inbox_.end(),
                              [&](const Msg& m) { return m.round <= round_; }),
               inbox_.end());
  ++round_;
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace scout::c3
