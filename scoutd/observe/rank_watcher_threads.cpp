// The watcher's reading of a threaded program's record (version 8, see
// rank_watcher.hpp): each communicator's progress and the threads' calls.
#include "scoutd/observe/rank_watcher.hpp"

#include <fmt/format.h>

#include "common/log.hpp"
#include "scoutd/observe/record_guard.hpp"

namespace scout::scoutd {

// The version-8 part: progress per communicator and the threads' calls. A
// communicator's counts only grow; a table that shrinks or a count that
// goes back is a broken record.
bool RankWatcher::read_threads(Slot& s, std::int64_t now) {
  const c3::RecordV8* v8 = c3::as_v8(*s.rec, s.version);
  if (!v8) return true;
  std::vector<c3::CommProgress> comms;
  std::vector<c3::ThreadSlot> threads;
  std::string why;
  std::uint64_t source = 0, full = 0, comms_full = 0;
  if (!guarded([&] {
        why = c3::comm_progress_read(*v8, comms);
        if (why.empty()) why = c3::threads_read(*v8, s.world_size, threads);
        source = __atomic_load_n(const_cast<std::uint64_t*>(&v8->source), __ATOMIC_RELAXED);
        full = __atomic_load_n(const_cast<std::uint64_t*>(&v8->threads_full), __ATOMIC_RELAXED);
        comms_full = __atomic_load_n(const_cast<std::uint64_t*>(&v8->comms_full), __ATOMIC_RELAXED);
      })) {
    invalidate(s, "record truncated while being read (SIGBUS)");
    return false;
  }
  if (why.empty() && source != SCOUT_SOURCE_MPI)
    why = fmt::format("version-8 record from source {}; expected {} (MPI)", source, SCOUT_SOURCE_MPI);
  for (auto& c : comms) {
    if (!why.empty()) break;
    auto it = s.progress_moved.find(c.id);
    const std::uint64_t counts = c.entered * 0x9E3779B97F4A7C15ULL ^ c.completed;
    if (it == s.progress_moved.end()) {
      if (s.progress_moved.size() >= 4 * c3::kProgressComms) continue;  // ids that keep changing: not followed
      s.progress_moved[c.id] = {counts, now};
      continue;
    }
    for (auto& o : s.comm_progress)
      if (o.id == c.id && (c.entered < o.entered || c.completed < o.completed))
        why = fmt::format("communicator {:016x}: collectives went back from {}/{} to {}/{}", c.id, o.entered,
                          o.completed, c.entered, c.completed);
    if (it->second.first != counts) it->second = {counts, now};
  }
  if (!why.empty()) {
    invalidate(s, why);
    return false;
  }
  s.comm_progress = std::move(comms);
  // A thread slot whose wait or collective is being written is kept as it
  // was (threads_read leaves busy slots out).
  if (threads.size() >= s.threads.size()) s.threads = std::move(threads);
  s.threads_full = full;
  s.comms_full = comms_full;
  s.have_threads = true;
  return true;
}

}  // namespace scout::scoutd
