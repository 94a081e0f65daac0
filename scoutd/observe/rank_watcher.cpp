// Local rank observation (see rank_watcher.hpp).
#include "scoutd/observe/rank_watcher.hpp"

#include "common/log.hpp"

#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "common/proc_info.hpp"
#include "scoutd/observe/record_guard.hpp"

namespace scout::scoutd {

int compute_bin(double seconds) {
  if (!(seconds > 1e-4)) return 0;
  int b = static_cast<int>(std::floor(2.0 * std::log2(seconds / 1e-4))) + 1;
  return std::min(b, kComputeBins - 1);
}

double compute_bin_upper(int bin) { return 1e-4 * std::pow(2.0, bin / 2.0); }

std::int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

RankWatcher::RankWatcher(std::string job, std::string step, int first_rank, int last_rank,
                         std::string node, double tick_s, std::string match_host,
                         std::uint32_t step_kind)
    : job_(std::move(job)), step_(std::move(step)), node_(std::move(node)),
      match_host_(std::move(match_host)), step_kind_(step_kind), first_(first_rank),
      last_(last_rank), tick_s_(tick_s) {
  if (!match_host_.empty()) return;  // discovered from /dev/shm (see discover())
  for (int r = first_; r <= last_; ++r) {
    Slot s;
    s.rank = r;
    slots_.push_back(std::move(s));
  }
}

// The ranks that run on this node, whatever launched them (srun tasks,
// mpirun's daemons, one torchrun per node): every record of this step in
// /dev/shm is a candidate, and try_attach keeps those naming this host.
// Listing /dev/shm every few ticks bounds the cost; slots are bounded too.
void RankWatcher::discover() {
  const std::string prefix = c3::record_shm_prefix(job_, step_);
  DIR* d = opendir("/dev/shm");
  if (!d) return;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.rfind(prefix, 0) != 0) continue;
    char* end = nullptr;
    errno = 0;
    const long r = std::strtol(n.c_str() + prefix.size(), &end, 10);
    if (errno != 0 || *end != '\0' || end == n.c_str() + prefix.size() || r < 0 || r > (1L << 30)) continue;
    if (known_.count(static_cast<int>(r))) continue;
    if (slots_.size() >= kMaxSlots) {
      if (!slots_full_logged_) {
        slots_full_logged_ = true;
        log::warning("{}: more than {} rank records of job {} step {}; the others are not observed", node_,
                     kMaxSlots, job_, step_);
      }
      break;
    }
    known_.insert(static_cast<int>(r));
    Slot s;
    s.rank = static_cast<int>(r);
    slots_.push_back(std::move(s));
  }
  closedir(d);
}

RankWatcher::~RankWatcher() {
  stop();
  for (auto& s : slots_) {
    if (s.pidfd >= 0) close(s.pidfd);
    if (s.rec) munmap(s.rec, s.map_len);
  }
}

void RankWatcher::start() {
  install_record_guard();  // truncated records: see record_guard.hpp
  thread_ = std::thread([this] { loop(); });
}

void RankWatcher::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void RankWatcher::loop() {
  const int tick_ms = static_cast<int>(tick_s_ * 1000);
  while (!stop_) {
    tick();
    poll_deaths(tick_ms);
  }
}

void RankWatcher::try_attach(Slot& s) {
  const std::string name = c3::record_shm_name(job_, step_, s.rank);
  // /dev/shm is shared and the name predictable: never a link, and never
  // blocked in open() by a FIFO another user put there.
  int fd = shm_open(name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
  if (fd < 0) {
    if (errno == ELOOP && s.bad_record.empty()) {
      s.bad_record = "a symbolic link, not a record";
      log::warning("{}: record {} refused: {}", node_, name, s.bad_record);
    }
    return;  // not there yet
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    close(fd);
    return;
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    if (s.bad_record.empty()) {
      s.bad_record = !S_ISREG(st.st_mode) ? std::string("not a regular file")
                                          : fmt::format("owned by uid {}, not by this job's user", st.st_uid);
      log::warning("{}: record {} refused: {}", node_, name, s.bad_record);
    }
    close(fd);
    return;
  }
  if (st.st_size < static_cast<off_t>(sizeof(c3::RankRecord))) {
    close(fd);
    return;  // being created
  }
  // Versions 6 to 10 are longer than version 5; the header says which
  // this is (the mapping covers the longest the file holds).
  static_assert(sizeof(c3::RecordV8) > sizeof(c3::RecordV7) && sizeof(c3::RecordV7) > sizeof(c3::RecordV10) &&
                sizeof(c3::RecordV10) > sizeof(c3::RecordV9) && sizeof(c3::RecordV9) > sizeof(c3::RecordV6));
  const std::size_t fsize = static_cast<std::size_t>(st.st_size);
  const std::size_t map_len = fsize >= sizeof(c3::RecordV8)    ? sizeof(c3::RecordV8)
                              : fsize >= sizeof(c3::RecordV7)  ? sizeof(c3::RecordV7)
                              : fsize >= sizeof(c3::RecordV10) ? sizeof(c3::RecordV10)
                              : fsize >= sizeof(c3::RecordV9)  ? sizeof(c3::RecordV9)
                              : fsize >= sizeof(c3::RecordV6) ? sizeof(c3::RecordV6)
                                                              : sizeof(c3::RankRecord);
  void* p = mmap(nullptr, map_len, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return;
  auto* rec = static_cast<c3::RankRecord*>(p);
  // The header is read once, into a copy, under the fault guard: the file
  // can be truncated under us at any time.
  c3::RankRecord* hdr_src = rec;
  struct Header {
    std::uint64_t magic;
    char bytes[offsetof(c3::RankRecord, lock)];
  } hdr{};
  if (!guarded([&] {
        hdr.magic = __atomic_load_n(&hdr_src->magic, __ATOMIC_ACQUIRE);
        std::memcpy(hdr.bytes, hdr_src, sizeof hdr.bytes);
      })) {
    munmap(p, map_len);
    invalidate(s, "record truncated while being read (SIGBUS)");
    return;
  }
  if (hdr.magic == 0) {  // not yet published
    munmap(p, map_len);
    return;
  }
  c3::RankRecord head{};
  std::memcpy(&head, hdr.bytes, sizeof hdr.bytes);
  std::string why = c3::record_check_header(head, std::min(static_cast<std::size_t>(st.st_size), map_len));
  if (why.empty() && (head.pid <= 0 || head.pid > (1 << 22)))
    why = fmt::format("pid {} is out of range", head.pid);
  if (why.empty() && !match_host_.empty() &&
      std::string(head.host, strnlen(head.host, sizeof head.host)) != match_host_) {
    s.foreign = true;  // stable for the rank's lifetime: never looked at again
    munmap(p, map_len);
    return;
  }
  if (why.empty() && head.world_rank != s.rank)
    why = fmt::format("claims rank {}; expected rank {}", head.world_rank, s.rank);
  if (!why.empty()) {
    if (why != s.bad_record) {
      log::warning("{}: record {} refused: {}", node_, name, why);
      s.bad_record = why;
    }
    munmap(p, map_len);
    return;
  }
  s.rec = rec;
  s.map_len = map_len;
  s.version = head.version;
  s.world_size = head.world_size;
  s.pid = head.pid;
  s.pidfd = static_cast<int>(syscall(SYS_pidfd_open, s.pid, 0));
  if (s.pidfd < 0 && errno == ESRCH) s.death_ns = monotonic_ns();  // gone already
  s.last_progress_ns = monotonic_ns();
}

// A record that broke a rule is dropped for the rest of the step: the rank
// is shown as `record_invalid` (with why) and counts as unobserved; scoutd
// never reads that mapping again.
void RankWatcher::invalidate(Slot& s, const std::string& why) {
  if (s.invalid.empty()) log::warning("{}: rank {}: record invalid: {}; the rank is no longer observed", node_, s.rank, why);
  s.invalid = why;
  if (s.rec) munmap(s.rec, s.map_len);
  s.rec = nullptr;
  s.have_last = false;
  if (s.pidfd >= 0) close(s.pidfd);
  s.pidfd = -1;
}

void RankWatcher::tick() {
  std::lock_guard lk(mu_);
  const std::int64_t now = monotonic_ns();
  if (!match_host_.empty() && ticks_++ % 5 == 0) discover();
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    auto& s = slots_[i];
    if (s.foreign || !s.invalid.empty()) continue;
    if (!s.rec) try_attach(s);
    if (!s.rec) continue;
    // Everything below reads a file the job's user writes: each read copies
    // under the fault guard, and each value is range-checked before use.
    c3::RecordLive live;
    bool consistent = false;
    if (!guarded([&] { consistent = c3::record_read(*s.rec, live); })) {
      invalidate(s, "record truncated while being read (SIGBUS)");
      continue;
    }
    if (!consistent) continue;  // writer busy: next tick
    if (std::string why = c3::record_check_live(live); !why.empty()) {
      invalidate(s, why);
      continue;
    }
    if (s.have_last && live.seq < s.last.seq) {
      invalidate(s, fmt::format("sequence number went back from {} to {}", s.last.seq, live.seq));
      continue;
    }
    if (s.version >= c3::kRecordVersion && !read_v6(s, now, ticks_ % 10 == 0)) continue;
    if (s.version == c3::kRecordVersionGpu && !read_gpu(s, now)) continue;
    if (s.version == c3::kRecordVersionMt && !read_threads(s, now)) continue;
    // Progress: a collective entered or completed, a message completed, or a
    // point-to-point wait began.
    std::uint64_t key = live.seq * 0x9E3779B97F4A7C15ULL ^ live.exit_ns ^ (live.in_collective << 63);
    if (s.have_p2p)
      key ^= (s.p2p.ops + 1) * 0xC2B2AE3D27D4EB4FULL ^ (s.p2p.call << 56) ^ (s.p2p.entry_ns * 0x165667B19E3779F9ULL);
    // A GPU rank also progresses while its GPU works through what was issued.
    if (s.have_gpu) key ^= (s.gpu.started + 3) * 0x94D049BB133111EBULL ^ (s.gpu.done + 5) * 0xBF58476D1CE4E5B9ULL;
    // The process state, sampled every 5 ticks: how long it has held.
    // Not while scout-stack holds it: its tracing stop ('t') is ours, and a
    // stopped rank must stay "stopped since" the moment it stopped.
    if (ticks_ % 5 == 0 && s.pid > 0 && s.death_ns == 0 && !s.tracing) {
      const std::string f = common::proc_stat_fields(s.pid);
      const char st = f.empty() ? 'X' : f[0];
      if (st != s.state || s.state_since_ns == 0) {
        s.state = st;
        s.state_since_ns = now;
      }
    }
    if (!s.have_last || key != s.progress_key) {
      s.progress_key = key;
      s.last_progress_ns = now;
    }
    s.last = live;
    s.have_last = true;
    // Merge the ring into the history and recompute the step statistics.
    if (live.seq > 0) {
      c3::CollEvent ev[c3::kRingSize];
      std::uint64_t from = live.seq >= c3::kRingSize ? live.seq - c3::kRingSize + 1 : 1;
      std::size_t n = 0;
      if (!guarded([&] { n = c3::ring_read(*s.rec, from, live.seq, ev); })) {
        invalidate(s, "record truncated while being read (SIGBUS)");
        continue;
      }
      auto& h = s.history;
      while (!h.empty() && h.back().seq >= from) h.pop_back();  // re-read: exits may be newer
      for (std::size_t i = 0; i < n; ++i) h.push_back(ev[i]);
      constexpr std::size_t kKeep = 256;
      if (h.size() > kKeep) h.erase(h.begin(), h.end() - kKeep);
      s.steps = analyse_steps(h, step_kind_);
      s.comm_jitter.clear();
      s.comm_wait = comm_durations(h, 16, &s.comm_jitter);
    }
    // New communicators this rank published (append-only table).
    std::uint64_t nc = 0;
    bool comms_ok = guarded([&] {
      nc = __atomic_load_n(const_cast<std::uint64_t*>(&s.rec->comm_count), __ATOMIC_ACQUIRE);
    });
    nc = std::min<std::uint64_t>(nc, c3::kCommTable);
    for (; comms_ok && s.comms_read < nc; ++s.comms_read) {
      c3::CommEntry ce;
      const c3::CommEntry* src = &s.rec->comms[s.comms_read];
      if (!(comms_ok = guarded([&] { std::memcpy(&ce, src, sizeof ce); }))) break;
      if (std::string why = c3::comm_entry_check(ce, s.comms_read); !why.empty()) {
        comms_ok = false;
        invalidate(s, why);
        break;
      }
      if (ce.stored != ce.size || ce.size < 2) continue;  // too large to list, or SELF
      s.comm_members[ce.id] = std::vector<int>(ce.members, ce.members + ce.stored);
    }
    if (!s.rec) continue;
    if (!comms_ok) {
      invalidate(s, "record truncated while being read (SIGBUS)");
      continue;
    }
    // New collective-output signatures.
    c3::OutSig os[c3::kOutSigRing];
    std::size_t no = 0;
    if (!guarded([&] { no = c3::outsig_read(*s.rec, s.outsig_next, os, &s.outsig_next); })) {
      invalidate(s, "record truncated while being read (SIGBUS)");
      continue;
    }
    for (std::size_t k = 0; k < no; ++k) s.outsigs.push_back({os[k].comm, os[k].call, os[k].kind, os[k].sig});
    outsig_new_ += no;
    constexpr std::size_t kKeepSigs = 1024;  // undelivered, per rank: the oldest go first
    if (s.outsigs.size() > kKeepSigs) s.outsigs.erase(s.outsigs.begin(), s.outsigs.end() - kKeepSigs);
  }
}

// The version-6 part: the point-to-point state (every tick), the end event
// and, when `counters`, the per-peer counters. False when the record was
// dropped as invalid.
bool RankWatcher::read_v6(Slot& s, std::int64_t /*now*/, bool counters) {
  const c3::RecordV6* v6 = c3::as_v6(*s.rec, s.version);
  if (!v6) return true;
  c3::P2PLive p2p;
  bool consistent = false;
  const c3::RecordV9* v9 = c3::as_v9(*s.rec, s.version);
  c3::P2PDirs dirs{};
  bool have_dirs = false;
  const c3::RecordV10* v10 = c3::as_v10(*s.rec, s.version);
  c3::P2PTags tags{};
  bool have_tags = false;
  c3::EndEvent end{};
  bool have_end = false;
  std::string end_why;
  c3::PeerSlot peers[c3::kPeerSlots];
  if (!guarded([&] {
        consistent = c3::p2p_read(*v6, p2p);
        // After the p2p part: the probe writes a wait's directions before it.
        if (v9 && consistent) have_dirs = c3::dirs_read(*v9, dirs);
        if (v10 && have_dirs) have_tags = c3::tags_read(*v10, tags);  // written before the directions
        if (!s.have_end) have_end = c3::end_read(*v6, end, &end_why);
        if (counters) std::memcpy(static_cast<void*>(peers), v6->peers, sizeof peers);
      })) {
    invalidate(s, "record truncated while being read (SIGBUS)");
    return false;
  }
  if (consistent) {
    if (std::string why = c3::p2p_check_live(p2p, s.world_size); !why.empty()) {
      invalidate(s, why);
      return false;
    }
    if (s.have_p2p && p2p.ops < s.p2p.ops) {
      invalidate(s, fmt::format("message count went back from {} to {}", s.p2p.ops, p2p.ops));
      return false;
    }
    s.p2p = p2p;
    s.have_p2p = true;
    s.have_dirs = false;
    s.have_tags = false;
    // (Only a completion call's: a blocking call's direction is its own.)
    if (have_dirs && dirs.entry_ns == p2p.entry_ns && p2p.call >= SCOUT_P2P_WAIT && p2p.call <= SCOUT_P2P_TESTSOME) {
      if (std::string why = c3::dirs_check(dirs, p2p.npeers); !why.empty()) {
        invalidate(s, why);
        return false;
      }
      s.dirs = dirs;
      s.have_dirs = true;
      if (have_tags && tags.entry_ns == p2p.entry_ns) {
        if (std::string why = c3::tags_check(tags, dirs, p2p.npeers); !why.empty()) {
          invalidate(s, why);
          return false;
        }
        s.tags = tags;
        s.have_tags = true;
      }
    }
  }
  if (have_end) {
    s.end = end;
    s.have_end = true;
  } else if (!end_why.empty() && s.invalid.empty()) {
    invalidate(s, end_why);
    return false;
  }
  if (counters) {
    s.peers.clear();
    for (auto& p : peers) {
      if (p.peer == 0 || p.peer > static_cast<std::uint64_t>(s.world_size)) continue;  // free, or not a rank
      RankEvidence::Peer e;
      e.sent = p.sent;
      e.recvd = p.recvd;
      e.sent_bytes = p.sent_bytes;
      e.recvd_bytes = p.recvd_bytes;
      e.waits = p.waits;
      e.wait_s = static_cast<double>(p.wait_ns) / 1e9;
      e.send_wait_s = static_cast<double>(p.send_wait_ns) / 1e9;
      s.peers[static_cast<int>(p.peer - 1)] = e;
    }
  }
  return true;
}

// The version-7 part: the GPU's device (once) and its completion state.
bool RankWatcher::read_gpu(Slot& s, std::int64_t now) {
  const c3::RecordV7* v7 = c3::as_v7(*s.rec, s.version);
  if (!v7) return true;
  c3::GpuLive g;
  bool consistent = false;
  std::vector<c3::CommOps> ops;
  std::string ops_why;
  char bus[sizeof v7->gpu_bus_id];
  int device = -1;
  std::uint64_t source = 0;
  if (!guarded([&] {
        consistent = c3::gpu_read(*v7, g);
        ops_why = c3::comm_ops_read(*v7, ops);
        if (!s.have_gpu) {
          std::memcpy(bus, v7->gpu_bus_id, sizeof bus);
          device = v7->cuda_device;
          source = v7->source;
        }
      })) {
    invalidate(s, "record truncated while being read (SIGBUS)");
    return false;
  }
  if (!s.have_gpu) {
    if (source != SCOUT_SOURCE_NCCL) {
      invalidate(s, fmt::format("version-7 record from source {}; expected {} (NCCL)", source, SCOUT_SOURCE_NCCL));
      return false;
    }
    bus[sizeof bus - 1] = 0;
    std::string b(bus);
    for (char c : b)
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') {
        invalidate(s, "GPU bus id holds characters other than hex digits, ':' and '.'");
        return false;
      }
    s.gpu_bus = b;
    s.gpu_device = device < -1 || device > 4096 ? -1 : device;
  }
  if (!ops_why.empty()) {
    invalidate(s, ops_why);
    return false;
  }
  s.comm_ops = std::move(ops);
  if (!consistent) return true;  // the completion thread is writing: next tick
  if (std::string why = c3::gpu_check_live(g, s.last.seq); !why.empty()) {
    invalidate(s, why);
    return false;
  }
  if (s.have_gpu && (g.done < s.gpu.done || g.started < s.gpu.started)) {
    invalidate(s, fmt::format("GPU progress went back from {}/{} to {}/{}", s.gpu.started, s.gpu.done, g.started, g.done));
    return false;
  }
  if (!s.have_gpu || g.done != s.gpu.done) s.gpu_done_ns = now;
  s.gpu = g;
  s.have_gpu = true;
  return true;
}

}  // namespace scout::scoutd
