// probe: collective-output signatures (see probe_state.hpp, coll_output):
// every Nth signable collective per communicator signs its output buffer.
#include <cstdio>
#include <cstdlib>
#include <span>

#include "libc3/signature.hpp"
#include "probe/fault_injection.hpp"
#include "probe/probe_state.hpp"

namespace scout::probe {

// Collective-output signatures: every Nth signable collective per
// communicator. Counters live in a small fixed table (no allocation).
namespace {
std::uint64_t g_outsig_every = 64;
struct CommCalls {
  std::uint64_t id, calls;
};
constexpr int kCommCalls = 64;
CommCalls g_comm_calls[kCommCalls];
int g_comm_calls_used = 0;

}  // namespace

void parse_outsig(int /*rank*/) {
  if (const char* v = std::getenv("SCOUT_OUTSIG_EVERY"); v && *v) {
    char* end = nullptr;
    unsigned long long n = std::strtoull(v, &end, 10);
    if (*end || v[0] == '-')
      std::fprintf(stderr, "scout-probe: init: ignoring SCOUT_OUTSIG_EVERY='%s': expected a "
                   "number of collectives (0: off)\n", v);
    else
      g_outsig_every = n;
  }
}

void coll_output(std::uint32_t kind, MPI_Comm comm, void* buf, std::int64_t count, MPI_Datatype dt,
                 bool per_member) noexcept {
  c3::RankRecord* r = g_record;
  if (!r || !buf || count <= 0 || buf == MPI_IN_PLACE) return;
  if (__builtin_expect(faults::g_corrupt_active, false)) faults::corrupt_output(kind, buf, count, dt);
  if (g_outsig_every == 0) return;
  const std::uint64_t cid = comm_identity(comm);
  // Threads calling collectives on their own communicators at once share
  // the counters' table and the record's ring: without the guard two took
  // one slot (one communicator's calls numbered with the other's: a healthy
  // rank's signature compared with its peers' of another call, a false sdc
  // in test 34) and pushed into the ring together.
  TableGuard guard;
  CommCalls* cc = nullptr;
  for (int i = 0; i < g_comm_calls_used; ++i)
    if (g_comm_calls[i].id == cid) { cc = &g_comm_calls[i]; break; }
  if (!cc) {
    if (g_comm_calls_used == kCommCalls) return;  // table full: not signed
    cc = &g_comm_calls[g_comm_calls_used++];
    *cc = {cid, 0};
  }
  const std::uint64_t call = ++cc->calls;
  if (call % g_outsig_every != 0) return;
  // Only contiguous data: size == extent, so the bytes are the elements.
  int tsize = 0;
  MPI_Aint lb = 0, extent = 0;
  if (PMPI_Type_size(dt, &tsize) != MPI_SUCCESS || PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
      tsize <= 0 || static_cast<MPI_Aint>(tsize) != extent || lb != 0)
    return;
  std::uint64_t n = static_cast<std::uint64_t>(count);
  if (per_member) {
    int size = 0;
    PMPI_Comm_size(comm, &size);
    n *= static_cast<std::uint64_t>(size);
  }
  // The bytes alone are signed: ranks may receive the same data through
  // different datatypes of one type signature (the root's Bcast of one
  // contiguous type of four ints, the others' of four MPI_INT), and their
  // outputs must still compare equal (the datatype and count in the
  // signature named a correct root sdc).
  const std::uint64_t bytes = n * static_cast<std::uint64_t>(tsize);
  const std::int64_t shape[1] = {static_cast<std::int64_t>(bytes)};
  c3::SignatureMeta meta{c3::kElemBytes, std::span<const std::int64_t>(shape, 1)};
  const std::uint64_t sig = c3::signature(buf, bytes, meta);
  c3::outsig_push(*r, cid, call, kind, sig, bytes);
}

}  // namespace scout::probe
