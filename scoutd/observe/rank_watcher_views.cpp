// What the watcher's snapshots say (see rank_watcher.hpp): the local summary
// for the trigger, the ranks' evidence for the gather, deaths reported, new
// attachments, the records unlinked at the end.
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

namespace {
// Seconds from a time the job's user wrote (CLOCK_MONOTONIC ns) to now: 0
// for a time after now, at most a year (the gather refuses more).
double seconds_since(std::int64_t now, std::uint64_t then_ns) {
  if (then_ns > static_cast<std::uint64_t>(now)) return 0;
  return std::min((static_cast<std::uint64_t>(now) - then_ns) / 1e9, 3.1e7);
}
}  // namespace

LocalSummary RankWatcher::summary() const {
  std::lock_guard lk(mu_);
  LocalSummary sum;
  sum.outsig_new = static_cast<std::uint32_t>(std::min<std::uint64_t>(outsig_new_, 1u << 30));
  const std::int64_t now = monotonic_ns();
  for (auto& s : slots_) {
    if (!s.rec || !s.have_last) continue;
    ++sum.attached;
    bool finalized = (s.last.state & c3::kStateFinalized) != 0;
    if (finalized) {
      ++sum.finalized;
      continue;
    }
    if (s.have_end) ++sum.ended;
    if (s.have_p2p && s.p2p.ops != s.ops_summarised) {
      ++sum.p2p_active;
      s.ops_summarised = s.p2p.ops;
    } else if (!(s.have_p2p && s.p2p.ops > 0) && !s.have_gpu && !s.have_threads && s.last.seq != s.seq_summarised) {
      ++sum.p2p_active;  // a collective-only CPU rank's collectives moved
    }
    s.seq_summarised = s.last.seq;
    if (s.death_ns) {
      if (!s.death_reported && !died_on_stop(s.death_ns)) ++sum.unreported_deaths;
      continue;
    }
    const double stalled = (now - s.last_progress_ns) / 1e9;
    sum.max_stall_s = std::max(sum.max_stall_s, stalled);
    // A threaded rank whose other threads keep it moving can still wait in
    // one communicator's collective: that communicator's stall counts.
    // Only a thread inside the communicator's collective waits (a started
    // nonblocking one being overlapped with compute does not).
    bool comm_inside = false;
    for (auto& c : s.comm_progress) {
      if (c.completed >= c.entered) continue;
      bool held = false;
      for (auto& t : s.threads) held = held || (t.coll_kind != 0 && t.coll_comm == c.id && t.coll_ordinal == c.entered);
      if (!held) continue;
      auto it = s.progress_moved.find(c.id);
      if (it == s.progress_moved.end()) continue;
      sum.max_stall_s = std::max(sum.max_stall_s, (now - it->second.second) / 1e9);
      comm_inside = true;
    }
    if (s.last.in_collective || (s.have_p2p && s.p2p.call != 0) || (s.have_gpu && s.gpu.started > s.gpu.done) ||
        comm_inside)
      ++sum.waiting;
    if ((s.state == 'T' || s.state == 't' || s.state == 'D' || s.state == 'Z') && s.state_since_ns)
      sum.max_stopped_s = std::max(sum.max_stopped_s, std::min(stalled, (now - s.state_since_ns) / 1e9));
    sum.min_seq = std::min(sum.min_seq, s.last.seq);
    sum.max_seq = std::max(sum.max_seq, s.last.seq);
    if (s.steps.steps >= 4) {
      ++sum.compute_hist[compute_bin(s.steps.compute_s)];
      sum.max_compute_s = std::max(sum.max_compute_s, s.steps.compute_s);
    }
    for (auto& [c, w] : s.comm_wait) {
      ++sum.comm_hist[compute_bin(w)];
      sum.max_comm_s = std::max(sum.max_comm_s, w);
    }
  }
  return sum;
}

std::vector<RankEvidence> RankWatcher::evidence(bool for_gather) const {
  std::lock_guard lk(mu_);
  if (for_gather) outsig_new_ = 0;
  std::vector<RankEvidence> out;
  const std::int64_t now = monotonic_ns();
  for (auto& s : slots_) {
    if (s.foreign || (!match_host_.empty() && !s.rec && s.invalid.empty())) continue;  // not (yet) ours
    RankEvidence e;
    e.rank = s.rank;
    e.node = node_;
    e.record_invalid = s.invalid;
    if (s.rec && s.have_last) {
      e.attached = true;
      e.pid = s.pid;
      e.finalized = (s.last.state & c3::kStateFinalized) != 0;
      e.alive = s.death_ns == 0;
      e.death_ns = s.death_ns;
      if (s.death_ns > 0) e.dead_s = std::max<double>(0, (now - s.death_ns) / 1e9);
      e.died_on_stop = died_on_stop(s.death_ns);
      e.seq = s.last.seq;
      e.fingerprint = s.last.fingerprint;
      e.comm_id = s.last.comm_id;
      e.kind = static_cast<std::uint32_t>(s.last.kind);
      e.in_collective = s.last.in_collective != 0;
      e.coll_count = s.last.count;
      e.coll_datatype = s.last.datatype;
      e.coll_op = s.last.op;
      e.coll_root = s.last.root;
      e.stalled_s = (now - s.last_progress_ns) / 1e9;
      // A stalled rank's last collectives before its position (a rank that
      // went on past where the others stopped says what it called there).
      if (e.stalled_s >= 0.5)
        for (auto it = s.history.rbegin(); it != s.history.rend() && e.recent.size() < kMaxRecent; ++it)
          if (it->seq < s.last.seq && it->exit_ns != 0) e.recent.push_back({it->seq, it->fingerprint, it->comm});
      e.steps = s.steps.steps;
      e.step_s = s.steps.step_s;
      e.compute_s = s.steps.compute_s;
      e.compute_jitter_s = s.steps.compute_jitter_s;
      e.comm_jitter = s.comm_jitter;
      e.wait_s = s.steps.wait_s;
      e.comm_wait = s.comm_wait;
      e.comm_members = s.comm_members;
      if (for_gather) e.outsigs = std::exchange(s.outsigs, {});
      if (s.have_p2p) {
        e.p2p_ops = s.p2p.ops;
        if (s.p2p.call != 0) {
          e.p2p_call = c3::p2p_call_name(s.p2p.call);
          e.p2p_wait_s = seconds_since(now, s.p2p.entry_ns);
          for (std::uint64_t k = 0; k < s.p2p.npeers && k < c3::kBlockedPeers; ++k)
            e.p2p_peers.push_back(static_cast<int>(s.p2p.peers[k]));
          e.p2p_more = s.p2p.more_peers != 0;
          e.p2p_comm = s.p2p.comm_id;
          e.p2p_any_comm = s.p2p.any_comm;
          e.p2p_tag = s.p2p.tag >= 0 && s.p2p.tag <= 0x7fffffff ? s.p2p.tag : -1;
          if (s.have_dirs)  // which way each listed peer's requests go
            for (std::size_t k = 0; k < e.p2p_peers.size(); ++k) {
              const bool r = (s.dirs.recv_mask >> k) & 1, w = (s.dirs.send_mask >> k) & 1;
              e.p2p_dirs.push_back(r && w ? 'b' : r ? 'r' : w ? 's' : '?');
              if (s.have_tags) {  // and with which tags
                e.p2p_recv_tags.push_back(static_cast<std::int32_t>(s.tags.recv_tag[k]));  // (checked: int range)
                e.p2p_send_tags.push_back(static_cast<std::int32_t>(s.tags.send_tag[k]));
              }
            }
        }
      }
      if (s.have_end) {
        const bool mpi_error = s.end.kind == SCOUT_END_ABORT && (s.end.addr & SCOUT_END_MPI_ERROR);
        e.end_kind = mpi_error                         ? "mpi_error"
                     : s.end.kind == SCOUT_END_ABORT ? "abort"
                     : s.end.kind == SCOUT_END_EXIT  ? "exit"
                                                     : "signal";
        if (s.end.p2p_call != 0) {
          e.end_call = c3::p2p_call_name(s.end.p2p_call);
        } else if (s.last.in_collective && s.last.seq == s.end.seq) {  // inside its last collective
          std::string c = c3::coll_name(static_cast<std::uint32_t>(s.last.kind));
          if (!c.empty()) c[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(c[0])));
          e.end_call = ((s.last.kind & 0x100) ? "MPI_I" : "MPI_") + c;  // a nonblocking one: MPI_Iallreduce
        }
        e.end_code = s.end.code;
        e.end_addr = mpi_error ? s.end.addr & ~SCOUT_END_MPI_ERROR : s.end.addr;  // the class index
        e.ended_on_stop = died_on_stop(static_cast<std::int64_t>(s.end.ns));
        e.end_ns = static_cast<std::int64_t>(s.end.ns);
        // (In double: the record's instant is the rank's to write, any 64 bits.)
        e.end_age_s = std::max(0.0, (static_cast<double>(now) - static_cast<double>(s.end.ns)) / 1e9);
        e.end_seq = s.end.seq;
      }
      e.peers = s.peers;
      if (s.have_gpu) {
        e.gpu.present = true;
        e.gpu.bus_id = s.gpu_bus;
        e.gpu.device = s.gpu_device;
        e.gpu.tracking = s.gpu.tracking != 0;
        e.gpu.started = s.gpu.started;
        e.gpu.done = s.gpu.done;
        e.gpu.idle_s = (now - s.gpu_done_ns) / 1e9;
        e.gpu.captured = s.gpu.captured;
        e.gpu.untracked = s.gpu.untracked;
        for (auto& c : s.comm_ops) e.gpu.comms.push_back({c.id, c.issued, c.begun, c.done});
        // The host never waits inside NCCL: a GPU rank waits while its GPU
        // is inside an operation it began and has not completed.
        e.in_collective = s.gpu.started > s.gpu.done;
      }
      if (s.have_threads) {
        e.threaded = true;
        e.threads_full = s.threads_full;
        e.comms_full = s.comms_full;
        for (auto& c : s.comm_progress) {
          RankEvidence::CommProgress p;
          p.id = c.id;
          p.entered = c.entered;
          p.completed = c.completed;
          p.fingerprint = c.fingerprint;
          p.kind = static_cast<std::uint32_t>(c.kind);
          auto it = s.progress_moved.find(c.id);
          p.since_s = it == s.progress_moved.end() ? 0 : std::max<double>(0, (now - it->second.second) / 1e9);
          e.comm_progress.push_back(p);
        }
        for (auto& t : s.threads) {
          RankEvidence::Thread th;
          th.tid = static_cast<long>(t.tid);
          if (t.coll_kind != 0) {
            th.coll_kind = static_cast<std::uint32_t>(t.coll_kind);
            th.coll_comm = t.coll_comm;
            th.coll_ordinal = t.coll_ordinal;
            th.coll_s = seconds_since(now, t.coll_entry_ns);
          }
          if (t.p2p.call != 0) {
            th.p2p_call = c3::p2p_call_name(t.p2p.call);
            th.p2p_wait_s = seconds_since(now, t.p2p.entry_ns);
            for (std::uint64_t k = 0; k < t.p2p.npeers && k < c3::kBlockedPeers; ++k)
              th.p2p_peers.push_back(static_cast<int>(t.p2p.peers[k]));
            th.p2p_comm = t.p2p.comm_id;
          }
          e.threads.push_back(std::move(th));
        }
      }
      if (e.alive) {
        common::ProcInfo p = common::read_proc_info(s.pid);
        // While scout-stack holds it, the state is the tracer's: the last
        // one sampled before is the rank's.
        if (s.tracing && p.exists && s.state != '?') p.state = s.state;
        e.state = p.state;
        e.wchan = p.wchan;
        e.syscall = p.syscall;
        e.rchar = p.rchar;
        e.wchar = p.wchar;
        if (s.have_stack && s.stack_key == s.progress_key) {
          e.stack = s.stack;
          e.stack_error = s.stack_error;
        }
        e.cpu_ns = p.cpu_ns;
        e.runq_ns = p.runq_ns;
        e.sched_at_ns = now;
        e.cpu_khz = p.cpu_khz;
        if (!e.gpu.present && !e.threaded)
        {
          // As of its last exit, plus the collective it is inside now.
          std::uint64_t in = std::min<std::uint64_t>(s.last.inside_ns, std::uint64_t{1} << 62);
          if (s.last.in_collective && s.last.entry_ns > 0 && now > 0 && static_cast<std::uint64_t>(now) > s.last.entry_ns)
            in += std::min<std::uint64_t>(static_cast<std::uint64_t>(now) - s.last.entry_ns, std::uint64_t{1} << 61);
          e.coll_in_ns = static_cast<long long>(in);
        }
        if (!p.exists) e.alive = false;
        if (s.state_since_ns && p.state == s.state) e.state_s = (now - s.state_since_ns) / 1e9;
      } else {
        e.state = 'X';
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<RankWatcher::StackWanted> RankWatcher::stacks_wanted(double min_s) const {
  std::lock_guard lk(mu_);
  std::vector<StackWanted> out;
  const std::int64_t now = monotonic_ns();
  for (auto& s : slots_) {
    if (!s.rec || !s.have_last || s.death_ns || s.foreign || (s.last.state & c3::kStateFinalized)) continue;
    if ((now - s.last_progress_ns) / 1e9 < min_s) continue;
    if (s.have_stack && s.stack_key == s.progress_key) continue;
    out.push_back({s.rank, s.pid, s.progress_key});
  }
  return out;
}

std::vector<RankWatcher::StackWanted> RankWatcher::live_ranks() const {
  std::lock_guard lk(mu_);
  std::vector<StackWanted> out;
  for (auto& s : slots_)
    if (s.rec && s.have_last && !s.death_ns && !s.foreign && !(s.last.state & c3::kStateFinalized))
      out.push_back({s.rank, s.pid, s.progress_key});
  return out;
}

void RankWatcher::set_tracing(int rank, bool on) {
  std::lock_guard lk(mu_);
  for (auto& s : slots_)
    if (s.rank == rank) s.tracing = on;
}

void RankWatcher::set_stack(int rank, std::uint64_t key, std::vector<std::string> frames, std::string error) {
  std::lock_guard lk(mu_);
  for (auto& s : slots_)
    if (s.rank == rank && s.progress_key == key) {
      s.have_stack = true;
      s.stack_key = key;
      s.stack = std::move(frames);
      s.stack_error = std::move(error);
    }
}

void RankWatcher::mark_deaths_reported(const std::vector<int>& ranks) {
  std::lock_guard lk(mu_);
  for (auto& s : slots_)
    for (int r : ranks)
      if (s.rank == r && s.death_ns) s.death_reported = true;
}

std::vector<std::pair<int, int>> RankWatcher::take_new_attachments() {
  std::lock_guard lk(mu_);
  std::vector<std::pair<int, int>> out;
  for (auto& s : slots_)
    if (s.rec && !s.announced) {
      s.announced = true;
      out.emplace_back(s.rank, s.pid);
    }
  return out;
}

void RankWatcher::unlink_records() {
  std::lock_guard lk(mu_);
  for (auto& s : slots_)
    if (!s.foreign) shm_unlink(c3::record_shm_name(job_, step_, s.rank).c_str());
}

}  // namespace scout::scoutd
