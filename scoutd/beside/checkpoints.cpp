// Checkpoint watcher and certifier (see checkpoints.hpp).
#include "scoutd/beside/checkpoints.hpp"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

namespace scout::scoutd {
namespace fs = std::filesystem;

namespace {

std::int64_t mtime_ms(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

// Newest mtime of a file, or of a directory and everything below it.
std::int64_t newest_mtime(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return -1;
  std::int64_t m = mtime_ms(st);
  if (S_ISDIR(st.st_mode)) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      struct stat s2 {};
      if (::lstat(it->path().c_str(), &s2) == 0) m = std::max(m, mtime_ms(s2));
    }
  }
  return m;
}

}  // namespace

CheckpointWatcher::CheckpointWatcher(std::string dir, double settle_s, std::string marker)
    : dir_(std::move(dir)), marker_(std::move(marker)), settle_s_(settle_s) {
  struct stat st {};
  if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::runtime_error(fmt::format("checkpoint directory {}: {}; expected an existing directory",
                                         dir_, ::stat(dir_.c_str(), &st) != 0 ? std::strerror(errno) : "not a directory"));
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0 || inotify_add_watch(fd_, dir_.c_str(), IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO |
                                                        IN_MODIFY | IN_ATTRIB | IN_DELETE) < 0) {
    std::string why = std::strerror(errno);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(fmt::format("checkpoint directory {}: inotify: {}", dir_, why));
  }
  // What is there before the job starts is not a checkpoint of this job.
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir_, ec)) seen_[e.path().filename().string()] = {0, 0, true};
}

CheckpointWatcher::~CheckpointWatcher() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<CompleteCheckpoint> CheckpointWatcher::poll(std::int64_t now_ms) {
  // Drain inotify: events only wake us; the scan below decides.
  char buf[4096];
  while (fd_ >= 0 && ::read(fd_, buf, sizeof buf) > 0) {
  }
  std::vector<CompleteCheckpoint> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.' || name.ends_with(".tmp")) continue;
    if (!marker_.empty() && name.size() > marker_.size() + 1 && name.ends_with("." + marker_)) continue;
    auto& s = seen_[name];
    if (s.reported) continue;
    const std::int64_t m = newest_mtime(e.path());
    if (m < 0) continue;
    if (m != s.mtime_ms) {
      s.mtime_ms = m;
      s.changed_ms = now_ms;
    }
    bool complete;
    if (!marker_.empty()) {
      std::error_code ec2;
      complete = fs::is_directory(e.path(), ec2) ? fs::exists(e.path() / marker_, ec2)
                                                 : fs::exists(e.path().string() + "." + marker_, ec2);
    } else {
      complete = now_ms - s.changed_ms >= static_cast<std::int64_t>(settle_s_ * 1000);
    }
    if (!complete) continue;
    s.reported = true;
    out.push_back({e.path().string(), m});
  }
  return out;
}

std::optional<std::pair<std::string, std::string>> certify(
    const sql::CheckpointRow& c, const std::vector<sql::ReplayCycleRow>& cycles,
    const std::vector<SdcEvent>& sdc) {
  if (c.state != "candidate") return std::nullopt;
  const sql::ReplayCycleRow* last_clean_before = nullptr;
  const sql::ReplayCycleRow* verifier = nullptr;
  for (auto& cy : cycles) {
    if (cy.outcome != "clean") continue;
    if (cy.started_ms < c.written_ms) last_clean_before = &cy;
    else if (!verifier) verifier = &cy;
  }
  const std::int64_t from = last_clean_before ? last_clean_before->started_ms : 0;
  const std::int64_t until = verifier ? verifier->finished_ms : INT64_MAX;
  for (auto& e : sdc)
    if (e.detected_ms > from && e.detected_ms <= until)
      return std::make_pair(
          std::string("rejected"),
          fmt::format("sdc verdict {} ({}) at {} after {}", e.id, e.summary, unix_ms_to_iso(e.detected_ms),
                      last_clean_before ? fmt::format("the last clean replay cycle before it (cycle {})",
                                                      last_clean_before->cycle)
                                        : std::string("the job started, with no clean replay cycle before it")));
  if (verifier)
    return std::make_pair(std::string("recovery_verified"),
                          fmt::format("clean replay cycle {} started {} after it was written; all {} "
                                      "devices agreed and no sdc verdict since {}",
                                      verifier->cycle, unix_ms_to_iso(verifier->started_ms),
                                      verifier->devices,
                                      last_clean_before ? fmt::format("cycle {}", last_clean_before->cycle)
                                                        : std::string("the job started")));
  return std::nullopt;
}

}  // namespace scout::scoutd
