// Test-only fault injection inside the probe (see fault_injection.hpp).
#include "probe/fault_injection.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "libc3/rank_record.hpp"

namespace scout::probe::faults {

bool g_delay_active = false;
bool g_corrupt_active = false;
bool g_p2p_delay_active = false;

// Test-only fault injection (SCOUT_PROBE_TEST_DELAY): this rank waits inside
// the collectives of communicators of the given sizes, like a slow link at
// its endpoint: the time is inside the collective for it and for every peer
// that needs its data. Off unless the variable is set; read once at init.
namespace {
int g_delay_sizes[4] = {0, 0, 0, 0};
long g_delay_ms = 0;
std::uint64_t g_delay_after = 0;

void parse_delay(int rank) {
  const char* v = std::getenv("SCOUT_PROBE_TEST_DELAY");
  if (!v || !*v) return;
  int r = -1, nsizes = 0;
  long ms = 0;
  unsigned long long after = 0;
  char sizes[64] = {};
  if (std::sscanf(v, "rank=%d,comm_size=%63[0-9+],ms=%ld,after=%llu", &r, sizes, &ms, &after) != 4 ||
      ms <= 0) {
    std::fprintf(stderr, "scout-probe: init: ignoring SCOUT_PROBE_TEST_DELAY='%s': expected "
                 "rank=R,comm_size=N[+M...],ms=D,after=SEQ\n", v);
    return;
  }
  if (r != rank) return;
  for (char* tok = std::strtok(sizes, "+"); tok && nsizes < 4; tok = std::strtok(nullptr, "+"))
    g_delay_sizes[nsizes++] = std::atoi(tok);
  g_delay_ms = ms;
  g_delay_after = after;
  g_delay_active = nsizes > 0;
}

}  // namespace

void delay(MPI_Comm comm, std::uint64_t seq) noexcept {
  if (seq < g_delay_after) return;
  int n = 0;
  PMPI_Comm_size(comm, &n);
  for (int sz : g_delay_sizes)
    if (sz == n) {
      timespec d{g_delay_ms / 1000, (g_delay_ms % 1000) * 1000000L};
      nanosleep(&d, nullptr);
      return;
    }
}

namespace {
// Test-only (SCOUT_PROBE_TEST_CORRUPT=rank=R,count=N,call=K,bit=B): the K-th
// Allreduce of N elements on this rank delivers its output with one bit
// flipped, as a corrupting link or reduction unit would.
long g_corrupt_count = 0;
unsigned long long g_corrupt_call = 0, g_corrupt_seen = 0;
int g_corrupt_bit = 0;

void parse_corrupt(int rank) {
  const char* c = std::getenv("SCOUT_PROBE_TEST_CORRUPT");
  if (!c || !*c) return;
  int r = -1, bit = 0;
  long count = 0;
  unsigned long long call = 0;
  if (std::sscanf(c, "rank=%d,count=%ld,call=%llu,bit=%d", &r, &count, &call, &bit) != 4 || count <= 0 ||
      call == 0 || bit < 0) {
    std::fprintf(stderr, "scout-probe: init: ignoring SCOUT_PROBE_TEST_CORRUPT='%s': expected "
                 "rank=R,count=N,call=K,bit=B\n", c);
    return;
  }
  if (r != rank) return;
  g_corrupt_count = count;
  g_corrupt_call = call;
  g_corrupt_bit = bit;
  g_corrupt_active = true;
}
}  // namespace

namespace {
long g_p2p_delay_ms = 0;
unsigned long long g_p2p_delay_after = 0, g_p2p_sends = 0;

void parse_p2p_delay(int rank) {
  const char* v = std::getenv("SCOUT_PROBE_TEST_P2P_DELAY");
  if (!v || !*v) return;
  int r = -1;
  long ms = 0;
  unsigned long long after = 0;
  if (std::sscanf(v, "rank=%d,ms=%ld,after=%llu", &r, &ms, &after) != 3 || ms <= 0) {
    std::fprintf(stderr, "scout-probe: init: ignoring SCOUT_PROBE_TEST_P2P_DELAY='%s': expected rank=R,ms=D,after=N\n", v);
    return;
  }
  if (r != rank) return;
  g_p2p_delay_ms = ms;
  g_p2p_delay_after = after;
  g_p2p_delay_active = true;
}
}  // namespace

void p2p_delay() noexcept {
  if (++g_p2p_sends < g_p2p_delay_after) return;
  timespec d{g_p2p_delay_ms / 1000, (g_p2p_delay_ms % 1000) * 1000000L};
  nanosleep(&d, nullptr);
}

void parse(int rank) noexcept {
  parse_delay(rank);
  parse_corrupt(rank);
  parse_p2p_delay(rank);
}

void corrupt_output(std::uint32_t kind, void* buf, std::int64_t count, MPI_Datatype dt) noexcept {
  if (kind != c3::kAllreduce || count != g_corrupt_count || ++g_corrupt_seen != g_corrupt_call) return;
  int tsize = 0;
  PMPI_Type_size(dt, &tsize);
  if (tsize <= 0) return;
  auto* bytes = static_cast<unsigned char*>(buf);
  const std::uint64_t nbits = static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(tsize) * 8;
  const std::uint64_t b = static_cast<std::uint64_t>(g_corrupt_bit) % nbits;
  bytes[b / 8] ^= static_cast<unsigned char>(1u << (b % 8));
}

}  // namespace scout::probe::faults
