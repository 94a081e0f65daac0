/* The per-rank shared-memory record, version 10: version 9 unchanged at the
 * front (its `version` field says 10 and its `size` the size of this
 * struct), then the tags of the requests a completion call waits for, per
 * listed peer and direction. Written by the MPI probe for programs that are
 * not given MPI_THREAD_MULTIPLE, in place of version 9. Readers accept
 * versions 5 to 10 and read the version-9 part of 10 as a version 9.
 * Never change a struct in this file once released.
 *
 * Concurrency: `tags` is guarded by the seqlock `tags_lock`, exactly as
 * `dirs` is by `dirs_lock`. The probe writes `tags` (then `dirs`) before the
 * `p2p` part of the same wait; a reader pairs them by `entry_ns` (a `tags`
 * whose `entry_ns` is not the `p2p` part's describes another wait:
 * unknown). */
#ifndef SCOUT_RECORD_V10_H
#define SCOUT_RECORD_V10_H

#include <stdint.h>

#include "scout_record_v9.h"

#define SCOUT_RECORD_VERSION_10 10u

/* A tag slot: a tag (>= 0), or one of these. */
#define SCOUT_TAG_NONE (-2)   /* no request that way to that peer is awaited */
#define SCOUT_TAG_SEVERAL (-1) /* several tags, or MPI_ANY_TAG */

#ifdef __cplusplus
extern "C" {
#endif

/* Slot i is p2p.peers[i] (the first SCOUT_RECORD_V6_BLOCKED listed); all
 * 8-byte fields, as in every seqlocked part. */
struct scout_p2p_tags_v10 {
  uint64_t entry_ns;                         /* the p2p part's entry_ns for the wait described */
  int64_t recv_tag[SCOUT_RECORD_V6_BLOCKED]; /* the tag of the awaited receives from peers[i] */
  int64_t send_tag[SCOUT_RECORD_V6_BLOCKED]; /* the tag of the awaited sends to peers[i] */
} __attribute__((aligned(8)));

struct scout_record_v10 {
  struct scout_record_v9 v9;
  uint64_t tags_lock __attribute__((aligned(64)));
  struct scout_p2p_tags_v10 tags;
};

#ifdef __cplusplus
}
#endif

#endif /* SCOUT_RECORD_V10_H */
