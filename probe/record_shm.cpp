// The rank record's shared-memory file (see record_shm.hpp).
#include "probe/record_shm.hpp"
#include "common/ids.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace scout::probe {

bool record_env(const char* who, const char** job, const char** step) noexcept {
  const char* off = std::getenv("SCOUT_PROBE");
  if (off && std::strcmp(off, "off") == 0) return false;
  *job = std::getenv("SCOUT_JOB_ID");
  if (!*job) return false;  // no scout for this job: behave exactly as without the probe
  *step = std::getenv("SCOUT_STEP_ID");
  if (!*step) *step = "0";
  if (!common::valid_job_id(*job) || !common::valid_step_id(*step)) {
    std::fprintf(stderr,
                 "%s: init: ignoring SCOUT_JOB_ID='%s' SCOUT_STEP_ID='%s': expected a decimal job id and a "
                 "step id of [0-9a-z_]; probe disabled\n",
                 who, *job, *step);
    return false;
  }
  return true;
}

c3::RankRecord* record_create(const char* who, const char* job, const char* step, int rank, int size,
                              std::uint32_t version, std::size_t bytes, char* name, std::size_t name_cap) noexcept {
  std::snprintf(name, name_cap, "%s", c3::record_shm_name(job, step, rank).c_str());
  // The name is predictable and /dev/shm is shared: create it exclusively.
  // A name that exists already is reused only if it is this user's own
  // regular file; another user's file (planted for this job id) is never
  // mapped.
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW, 0600);
  if (fd < 0 && errno == EEXIST) {
    fd = shm_open(name, O_RDWR | O_NOFOLLOW, 0);
    struct stat st {};
    // Two probes in one process (MPI and NCCL) would both publish this rank:
    // the first one keeps it.
    // A record this process finalized (its name stays until it exits) is
    // taken again: a program that finalizes MPI and goes on with NCCL.
    std::int32_t owner = 0;
    std::uint64_t state = 0;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        pread(fd, &owner, sizeof owner, offsetof(c3::RankRecord, pid)) == static_cast<ssize_t>(sizeof owner) &&
        owner == static_cast<std::int32_t>(getpid()) &&
        !(pread(fd, &state, sizeof state, offsetof(c3::RankRecord, live) + offsetof(c3::RecordLive, state)) ==
              static_cast<ssize_t>(sizeof state) &&
          (state & c3::kStateFinalized))) {
      close(fd);
      return nullptr;  // already published by this process's other probe
    }
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())) {
      std::fprintf(stderr, "%s: init: %s exists and belongs to uid %u, not to this job's user %u; "
                   "probe disabled (the rank runs unobserved)\n", who, name, static_cast<unsigned>(st.st_uid),
                   static_cast<unsigned>(geteuid()));
      close(fd);
      return nullptr;
    }
  }
  if (fd < 0) {
    std::fprintf(stderr, "%s: init: shm_open %s: %s; probe disabled\n", who, name, std::strerror(errno));
    return nullptr;
  }
  fchmod(fd, 0600);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    std::fprintf(stderr, "%s: init: ftruncate %s: %s; probe disabled\n", who, name, std::strerror(errno));
    close(fd);
    shm_unlink(name);
    return nullptr;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "%s: init: mmap %s: %s; probe disabled\n", who, name, std::strerror(errno));
    shm_unlink(name);
    return nullptr;
  }
  auto* r = static_cast<c3::RankRecord*>(p);
  __atomic_store_n(&r->magic, 0, __ATOMIC_RELAXED);  // unpublish a stale record
  // Everything after the header is cleared (a reused file held a previous run).
  const std::size_t from = offsetof(c3::RankRecord, lock);
  std::memset(static_cast<char*>(p) + from, 0, bytes - from);
  r->version = version;
  r->size = static_cast<std::uint32_t>(bytes);
  r->world_rank = rank;
  r->world_size = size;
  r->pid = static_cast<std::int32_t>(getpid());
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  r->start_ns = static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
  std::snprintf(r->job_id, sizeof r->job_id, "%s", job);
  std::snprintf(r->step_id, sizeof r->step_id, "%s", step);
  const char* host = std::getenv("SCOUT_HOST");
  if (!host || !*host) host = std::getenv("SLURMD_NODENAME");  // Slurm node name
  if (host && *host) std::snprintf(r->host, sizeof r->host, "%s", host);
  else gethostname(r->host, sizeof r->host - 1);
  return r;
}

void record_publish(c3::RankRecord& r) noexcept {
  c3::record_write_begin(r);
  c3::rec_store(r.live.state, std::uint64_t{c3::kStateInitialized});
  c3::record_write_end(r);
  __atomic_store_n(&r.magic, c3::kRecordMagic, __ATOMIC_RELEASE);  // publish last
}

namespace {
// The name of a record closed by this process, removed when it exits: only
// while the name is still that file (its inode) and the file still says
// this process wrote it (a rank restarted under the same name keeps its own).
char g_closed_name[256];
pid_t g_closed_pid = 0;
ino_t g_closed_ino = 0;
dev_t g_closed_dev = 0;
bool closed_file_is_ours(ino_t* ino, dev_t* dev) noexcept {
  const int fd = shm_open(g_closed_name, O_RDONLY | O_NOFOLLOW, 0);
  if (fd < 0) return false;
  struct stat st {};
  std::int32_t owner = 0;
  const bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                  pread(fd, &owner, sizeof owner, offsetof(c3::RankRecord, pid)) == static_cast<ssize_t>(sizeof owner) &&
                  owner == static_cast<std::int32_t>(getpid());
  close(fd);
  if (ok && ino) *ino = st.st_ino, *dev = st.st_dev;
  return ok && (ino || (st.st_ino == g_closed_ino && st.st_dev == g_closed_dev));
}
void unlink_closed() noexcept {
  if (g_closed_name[0] && g_closed_pid == getpid() && closed_file_is_ours(nullptr, nullptr))
    shm_unlink(g_closed_name);
  g_closed_name[0] = '\0';
}
// At exit (after main returns or exit()), once per loaded probe library.
__attribute__((destructor)) void unlink_closed_at_exit() { unlink_closed(); }
}  // namespace

void record_close(c3::RankRecord* r, const char* name, std::size_t bytes) noexcept {
  if (!r) return;
  c3::record_write_begin(*r);
  c3::rec_store(r->live.state, std::uint64_t{c3::kStateInitialized | c3::kStateFinalized});
  c3::record_write_end(*r);
  // The observer keeps its own mapping; the name stays until this process
  // exits, so that an observer that had not attached yet still sees it
  // finalized (its peers may wait for it).
  munmap(r, bytes);
  if (std::strlen(name) < sizeof g_closed_name) {
    unlink_closed();  // an earlier record this process closed
    std::strcpy(g_closed_name, name);
    g_closed_pid = getpid();
    if (!closed_file_is_ours(&g_closed_ino, &g_closed_dev)) g_closed_name[0] = '\0';  // not ours now: leave it
  } else {
    shm_unlink(name);
  }
}

}  // namespace scout::probe
