/* The per-rank shared-memory record, version 9: version 6 unchanged at the
 * front (its `version` field says 9 and its `size` the size of this struct),
 * then which way each awaited request goes, for the MPI probe's records of
 * programs that are not given MPI_THREAD_MULTIPLE (those write version 8,
 * whose thread slots have no directions). A sibling of versions 7 and 8:
 * readers accept versions 5 to 9 and read the version-6 part of 7, 8 and 9
 * alike. Never change a struct in this file once released.
 *
 * Concurrency: `dirs` is guarded by the seqlock `dirs_lock`, exactly as
 * `p2p` is by `p2p_lock`. The probe writes `dirs` before the `p2p` part of
 * the same wait; a reader pairs them by `entry_ns` (a `dirs` whose
 * `entry_ns` is not the `p2p` part's describes another wait: unknown). */
#ifndef SCOUT_RECORD_V9_H
#define SCOUT_RECORD_V9_H

#include <stdint.h>

#include "scout_record_v6.h"

#define SCOUT_RECORD_VERSION_9 9u

#ifdef __cplusplus
extern "C" {
#endif

/* The requests a completion call (MPI_Wait*, a loop of MPI_Test*) waits for,
 * per listed peer: bit i of a mask is p2p.peers[i]. A blocking call's
 * direction is its call's, and is not written here. */
struct scout_p2p_dirs_v9 {
  uint64_t entry_ns;  /* the p2p part's entry_ns for the wait described */
  uint64_t recv_mask; /* bit i: a receive from p2p.peers[i] is awaited */
  uint64_t send_mask; /* bit i: a send to p2p.peers[i] is awaited */
  uint64_t reserved;
} __attribute__((aligned(8)));

struct scout_record_v9 {
  struct scout_record_v6 v6;
  uint64_t source; /* SCOUT_SOURCE_MPI (scout_record_v7.h's numbering): 1 */
  uint64_t dirs_lock __attribute__((aligned(64)));
  struct scout_p2p_dirs_v9 dirs;
};

#ifdef __cplusplus
}
#endif

#endif /* SCOUT_RECORD_V9_H */
