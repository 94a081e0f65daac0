// libc3 consensus rounds (see tree_round.hpp for the contract).
#include "libc3/tree_round.hpp"

#include <algorithm>
#include <cstring>

#include "libc3/mpi_transport.hpp"

namespace scout::c3 {

namespace {
constexpr int kTagUp = 0x5C01;
constexpr int kTagDown = 0x5C02;
constexpr int kTagJoin = 0x5C03;  // a member the others lost asks back in
constexpr int kTagAlive = 0x5C04; // the root still waits: a keep-alive wave (8-byte wave number)

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

TreeRound::TreeRound(MPI_Comm parent, Options opt)
    : owned_transport_(std::make_unique<MpiTransport>(parent)),
      owned_clock_(std::make_unique<WallClock>()),
      net_(*owned_transport_),
      clock_(*owned_clock_),
      opt_(opt) {
  me_ = net_.rank();
  size_ = net_.size();
  alive_.resize(static_cast<std::size_t>(size_));
  for (int i = 0; i < size_; ++i) alive_[static_cast<std::size_t>(i)] = i;
  is_lost_.assign(static_cast<std::size_t>(size_), false);
}

TreeRound::TreeRound(RoundTransport& transport, RoundClock& clock, Options opt)
    : net_(transport), clock_(clock), opt_(opt) {
  me_ = net_.rank();
  size_ = net_.size();
  alive_.resize(static_cast<std::size_t>(size_));
  for (int i = 0; i < size_; ++i) alive_[static_cast<std::size_t>(i)] = i;
  is_lost_.assign(static_cast<std::size_t>(size_), false);
}

TreeRound::~TreeRound() = default;

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
  Bytes b = encode_round_message(round_, lost, payload);
  const std::size_t n = b.size();
  if (!net_.send(dest, tag, std::move(b))) return;  // the peer is gone; its silence will be noticed by deadline
  bytes_sent_ += n;
  ++msgs_sent_;
}

bool TreeRound::pump() {
  net_.progress();
  got_ = false;
  while (auto r = net_.receive()) {
    got_ = true;
    take(std::move(*r));
  }
  return got_;
}

void TreeRound::take(Received r) {
  if (r.source < 0) return;  // the transport received nothing usable
  Msg msg{r.source, r.tag, 0, {}, {}};
  if (!parse_round_message(r.bytes.data(), r.bytes.size(), msg.round, msg.lost, msg.payload)) {
    ++malformed_;
    return;  // not ours, or a peer's bytes that do not add up: dropped
  }
  const bool from_lost = r.source < size_ && is_lost_[static_cast<std::size_t>(r.source)];
  if (r.tag == kTagJoin) {
    // A majority root takes back only members it holds lost; a minority
    // member may form a majority with any that ask (finish_minority).
    if (r.source < size_) join_requests_.insert(r.source);
    return;
  }
  if (minority_) {
    // Cut off from the majority: a down message that names this member as
    // rejoined matters, whatever its round or sender. So does a contribution
    // (the last to arrive per sender: rounds are not ordered across views):
    // when a round follows the rejoin at once, its new children send theirs
    // before it has read that message (one look, on a loaded host); dropped,
    // they were lost (test 06b under load).
    if (r.tag == kTagDown && std::find(msg.lost.begin(), msg.lost.end(), -(me_ + 1)) != msg.lost.end()) {
      inbox_.push_back(std::move(msg));
    } else if (r.tag == kTagUp) {
      auto same = std::find_if(inbox_.begin(), inbox_.end(),
                               [&](const Msg& m) { return m.tag == kTagUp && m.source == msg.source; });
      if (same == inbox_.end()) inbox_.push_back(std::move(msg));
      else *same = std::move(msg);
    }
    return;
  }
  if (from_lost) {
    // A contribution to a later round may come from a member the root took
    // back in the round this one is still finishing (told directly, it can
    // begin the next round first): kept until finish_down decides.
    if (r.tag == kTagUp && msg.round > round_) {
      inbox_.push_back(std::move(msg));
      return;
    }
    // A member the others hold lost still runs rounds of its old view (it
    // was frozen, or cut off and back): it would wait out every deadline
    // and lose its view one parent per round, O(members) rounds. Told at
    // its first contribution, it is expelled at once and asks back in.
    if (r.tag == kTagUp) send(r.source, kTagDown, {r.source}, Bytes{});
    return;  // otherwise ignored
  }
  if (r.tag == kTagAlive) {
    // A sign of life from above, whatever its round (a member that fell
    // behind still hears that the path above works); forwarded once per
    // wave, within this member's round only.
    std::uint64_t w = 0;
    if (msg.round > round_ && state_ == State::kDown) heard_ = clock_.now();
    if (msg.round == round_ && (state_ == State::kUp || state_ == State::kDown) && msg.payload.size() == sizeof w) {
      std::memcpy(&w, msg.payload.data(), sizeof w);
      if (w > wave_) {
        wave_ = w;
        heard_ = clock_.now();
        send_alive(w);
      }
    }
    return;
  }
  if (msg.round < round_) return;  // stale
  inbox_.push_back(std::move(msg));
}

// A down message of a later round means this member fell behind (its parent
// died after forwarding its contribution, and it waited out the deadline
// while the others went on): it takes that result and catches up.
std::optional<TreeRound::Msg> TreeRound::find(int tag, int source) {
  for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
    if (it->tag != tag) continue;
    if (tag == kTagDown ? it->round < round_ : it->round != round_) continue;
    if (source >= 0 && it->source != source) continue;
    Msg m = std::move(*it);
    inbox_.erase(it);
    if (m.round > round_) round_ = m.round;  // caught up
    return m;
  }
  return std::nullopt;
}

std::optional<TreeRound::Msg> TreeRound::find_rejoin() {
  for (auto it = inbox_.begin(); it != inbox_.end(); ++it)
    if (it->tag == kTagDown && std::find(it->lost.begin(), it->lost.end(), -(me_ + 1)) != it->lost.end()) {
      Msg m = std::move(*it);
      inbox_.erase(it);
      return m;
    }
  return std::nullopt;
}

void TreeRound::send_alive(std::uint64_t wave) {
  Bytes b(sizeof wave);
  std::memcpy(b.data(), &wave, sizeof wave);
  for (int k = 0; k < 2; ++k) {
    const int c = 2 * i_ + 1 + k;
    if (c >= n_) continue;
    const int child = alive_[static_cast<std::size_t>(c)];
    const bool silent = (state_ == State::kUp && k >= child_) ||
                        std::binary_search(suspects_.begin(), suspects_.end(), child);
    if (!std::binary_search(suspects_.begin(), suspects_.end(), child)) send(child, kTagAlive, {}, b);
    // Under a child not heard from (yet), its children may wait on it.
    if (silent)
      for (int g : {2 * c + 1, 2 * c + 2})
        if (g < n_) send(alive_[static_cast<std::size_t>(g)], kTagAlive, {}, b);
  }
}

void TreeRound::update_wake() {
  wake_at_ = deadline_;
  if (state_ == State::kUp && i_ == 0) wake_at_ = std::min(wake_at_, next_alive_);
  if (state_ == State::kDown) wake_at_ = std::min(wake_at_, silent_until());
}

// How long a member waiting for its down message goes without a sign of
// life from above before it holds its parent lost: two hops (the root sends
// a wave every half hop), and a quarter hop more per level of depth, so that
// when the root is lost its children conclude first and their down messages
// (naming the root) reach the levels below before those conclude too and
// blame their own, live, parents.
Clock::time_point TreeRound::silent_until() const { return heard_ + 2 * hop_ + depth_ * (hop_ / 4); }

void TreeRound::finish(Clock::time_point t) {
  res_.seconds = std::chrono::duration<double>(t - t0_).count();
  state_ = State::kIdle;
}

// A member that sees no strict majority (it was frozen, partitioned, or
// declared lost by the others) decides nothing. It asks every member it
// cannot reach to take it back (at most once a second) and waits one hop for
// a down message that names it as rejoined; then it adopts that message's
// membership and result and is a member again.
void TreeRound::begin_minority() {
  minority_ = true;
  state_ = State::kMinority;
  deadline_ = wake_at_ = t0_ + hop_;
  if (!asked_ || t0_ - last_join_ >= std::chrono::seconds(1)) {
    asked_ = true;
    last_join_ = t0_;
    for (int w = 0; w < size_; ++w)
      if (w != me_) send(w, kTagJoin, {}, Bytes{});
  }
}

void TreeRound::finish_minority(std::optional<Msg> m) {
  minority_ = false;
  const auto now = clock_.now();
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
          res_.rejoined.push_back(w);
        }
      for (int w : group)
        if (w != me_) send(w, kTagDown, lost, Bytes{});
      net_.progress();
      alive_ = group;
      res_.rejoined.push_back(me_);
      // Kept contributions are of other views' rounds (the group only asked).
      inbox_.erase(std::remove_if(inbox_.begin(), inbox_.end(), [](const Msg& x) { return x.tag == kTagUp; }),
                   inbox_.end());
      ++round_;
      finish(now);
      return;  // nothing decided this round; a majority again from the next
    }
    res_.minority = true;
    ++round_;
    finish(now);
    return;
  }
  // The root's view: exactly the members its message lists as lost.
  std::fill(is_lost_.begin(), is_lost_.end(), false);
  for (int w : m->lost) {
    if (w >= 0 && w < size_ && w != me_) is_lost_[static_cast<std::size_t>(w)] = true;
    if (w < 0 && -w - 1 < size_) res_.rejoined.push_back(-w - 1);
  }
  alive_.clear();
  for (int w = 0; w < size_; ++w)
    if (!is_lost_[static_cast<std::size_t>(w)]) alive_.push_back(w);
  round_ = m->round + 1;
  // What is left: contributions to the round right after (see take()).
  inbox_.erase(std::remove_if(inbox_.begin(), inbox_.end(),
                              [&](const Msg& x) { return x.tag != kTagUp || x.round != round_; }),
               inbox_.end());
  early_kept_ += inbox_.size();
  res_.down = std::move(m->payload);
  res_.complete = true;
  finish(now);
}

void TreeRound::begin(const Bytes& up, const Combine& combine, const Decide& decide) {
  res_ = RoundResult{};
  combine_ = combine;
  decide_ = decide;
  t0_ = clock_.now();
  hop_ = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt_.hop_timeout_s));
  if (index_of(me_) < 0 || !has_quorum()) {
    begin_minority();
    return;
  }
  n_ = static_cast<int>(alive_.size());
  i_ = index_of(me_);
  tree_height_ = height_of(0, n_);
  depth_ = depth_of(i_);
  acc_ = up;
  suspects_.clear();
  adopted_.clear();
  child_ = 0;
  wave_ = 0;
  state_ = State::kUp;
  // Each child's contribution is awaited until this member's height in
  // hops, and half a hop more.
  deadline_ = t0_ + hop_ * height_of(i_, n_) + hop_ / 2;
  next_alive_ = t0_ + hop_ / 2;
  update_wake();
}

bool TreeRound::advance() {
  pump();
  const auto now = clock_.now();
  switch (state_) {
    case State::kIdle:
      return true;
    case State::kMinority: {
      auto m = find_rejoin();
      if (!m && now < deadline_) return false;
      finish_minority(std::move(m));
      return true;
    }
    case State::kUp:
      // --- up: gather the children's contributions ---------------------------
      if (i_ == 0 && now >= next_alive_) {  // the root still waits: tell the tree
        send_alive(++wave_);
        next_alive_ = now + hop_ / 2;
      }
      while (child_ < 2) {
        const int c = 2 * i_ + 1 + child_;
        if (c >= n_) {
          ++child_;
          continue;
        }
        const int child = alive_[static_cast<std::size_t>(c)];
        if (auto m = find(kTagUp, child)) {
          combine_(acc_, m->payload);
          suspects_.insert(suspects_.end(), m->lost.begin(), m->lost.end());
        } else if (now >= deadline_) {
          suspects_.push_back(child);
          for (int g : {2 * c + 1, 2 * c + 2})
            if (g < n_) adopted_.push_back(alive_[static_cast<std::size_t>(g)]);
        } else {
          update_wake();
          return false;
        }
        ++child_;
      }
      finish_up();
      if (state_ == State::kIdle) return true;
      [[fallthrough]];
    case State::kDown: {
      if (auto m = find(kTagDown, -1)) {
        res_.down = std::move(m->payload);
        res_.complete = true;
        finish_down(std::move(m->lost), {});
        return true;
      }
      // The way down broke at the parent: tell the subtree. Either the
      // round's whole budget passed, or nothing from above (a down message
      // or a keep-alive wave) for two hops and a bit (silent_until): the root
      // sends a wave every half hop while it waits, so the path above is
      // broken.
      const auto t = clock_.now();
      if (t < deadline_ && t < silent_until()) {
        update_wake();
        return false;
      }
      finish_down({alive_[static_cast<std::size_t>((i_ - 1) / 2)]}, {});
      return true;
    }
  }
  return true;
}

void TreeRound::finish_up() {
  std::sort(suspects_.begin(), suspects_.end());
  suspects_.erase(std::unique(suspects_.begin(), suspects_.end()), suspects_.end());
  if (i_ != 0) {
    send(alive_[static_cast<std::size_t>((i_ - 1) / 2)], kTagUp, suspects_, acc_);
    state_ = State::kDown;
    deadline_ = t0_ + hop_ * (tree_height_ + depth_ + 2);
    heard_ = clock_.now();
    update_wake();
    return;
  }
  // --- the root decides ------------------------------------------------------
  // The message down carries every member lost so far (empty in steady
  // state), so a member that skipped a round still converges.
  std::vector<int> lost = suspects_;
  std::vector<int> rejoining;
  res_.root = true;
  // Only a root that heard from a strict majority of all the members
  // decides. A root made by a stale view (frozen, or cut off) hears from a
  // minority: it decides nothing, and its members ask the majority back in.
  // A silent member took its whole subtree's contributions with it: what
  // reached the root is the tree less the subtrees of every suspect, each
  // marked once (the simulator's checker found a thawed root cut off with
  // one other member that counted only its two silent children, and
  // committed).
  std::vector<bool> unheard(static_cast<std::size_t>(n_), false);
  for (int w : suspects_) {
    const int i = index_of(w);
    if (i <= 0) continue;
    for (long first = i, width = 1; first < n_; first = 2 * first + 1, width *= 2)
      for (long k = first; k < std::min<long>(first + width, n_); ++k) unheard[static_cast<std::size_t>(k)] = true;
  }
  const int reached = static_cast<int>(std::count(unheard.begin(), unheard.end(), false));
  if (2 * reached > size_) {
    // Members the others had lost and that asked back in rejoin now; the
    // message down names them as -(w+1) so every survivor re-admits them.
    for (int w : join_requests_)
      if (w >= 0 && w < size_ && is_lost_[static_cast<std::size_t>(w)]) rejoining.push_back(w);
    for (int w : rejoining) is_lost_[static_cast<std::size_t>(w)] = false;
    res_.down = decide_(acc_, lost);
    res_.complete = true;
  } else {
    res_.minority = true;
  }
  for (int w = 0; w < size_; ++w)
    if (is_lost_[static_cast<std::size_t>(w)]) lost.push_back(w);
  for (int w : rejoining) lost.push_back(-(w + 1));
  finish_down(std::move(lost), rejoining);
}

// --- down: everyone forwards, then applies the membership change -----------
void TreeRound::finish_down(std::vector<int> lost, const std::vector<int>& rejoining) {
  for (int c : {2 * i_ + 1, 2 * i_ + 2}) {
    if (c >= n_) continue;
    const int child = alive_[static_cast<std::size_t>(c)];
    if (!std::binary_search(suspects_.begin(), suspects_.end(), child))
      send(child, kTagDown, lost, res_.complete ? res_.down : Bytes{});
  }
  for (int g : adopted_) send(g, kTagDown, lost, res_.complete ? res_.down : Bytes{});
  for (int w : rejoining) send(w, kTagDown, lost, res_.down);  // not in this round's tree
  net_.progress();

  for (int w : lost) {
    if (w < 0 && -w - 1 < size_) {  // rejoined
      const int r = -w - 1;
      if (is_lost_[static_cast<std::size_t>(r)] || std::find(rejoining.begin(), rejoining.end(), r) != rejoining.end()) {
        is_lost_[static_cast<std::size_t>(r)] = false;
        res_.rejoined.push_back(r);
      }
      continue;
    }
    if (w < 0 || w >= size_ || is_lost_[static_cast<std::size_t>(w)]) continue;
    if (w == me_) {
      res_.expelled = true;
      continue;
    }
    is_lost_[static_cast<std::size_t>(w)] = true;
    res_.newly_lost.push_back(w);
  }
  alive_.clear();
  for (int w = 0; w < size_; ++w)
    if (!is_lost_[static_cast<std::size_t>(w)] && !(res_.expelled && w == me_)) alive_.push_back(w);
  join_requests_.clear();
  // Contributions kept for a later round from members still held lost: the
  // member was not taken back; it is told (see take()).
  for (auto it = inbox_.begin(); it != inbox_.end();) {
    if (it->tag == kTagUp && it->source >= 0 && it->source < size_ && is_lost_[static_cast<std::size_t>(it->source)]) {
      send(it->source, kTagDown, {it->source}, Bytes{});
      it = inbox_.erase(it);
    } else {
      ++it;
    }
  }
  // Drop what is left of this round.
  inbox_.erase(std::remove_if(inbox_.begin(), inbox_.end(), [&](const Msg& m) { return m.round <= round_; }),
               inbox_.end());
  ++round_;
  finish(clock_.now());
}

RoundResult TreeRound::run(const Bytes& up, const Combine& combine, const Decide& decide) {
  begin(up, combine, decide);
  auto sleep = std::chrono::microseconds(20);
  while (!advance()) {
    if (got_) {  // something arrived: look again at once
      sleep = std::chrono::microseconds(20);
      continue;
    }
    const auto left = wake_at_ - clock_.now();
    if (left > Clock::duration::zero())
      clock_.sleep_for(std::min<Clock::duration>(sleep, left));
    sleep = std::min(sleep * 2, std::chrono::microseconds(2000));
  }
  return std::move(res_);
}

}  // namespace scout::c3
