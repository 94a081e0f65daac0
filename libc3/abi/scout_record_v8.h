/* The per-rank shared-memory record, version 8: version 6 unchanged at the
 * front (its `version` field says 8 and its `size` the size of this struct),
 * then what the MPI probe (libscout_probe.so) adds for programs whose threads
 * call MPI at once (MPI_THREAD_MULTIPLE): progress per communicator, and
 * what each thread waits in. Version 7 (the NCCL probe's GPU part) is a
 * sibling, not a prefix: readers accept versions 5, 6, 7 and 8, and read the
 * version-6 part of 7 and 8 alike. Never change a struct in this file once
 * released.
 *
 * Concurrency: a communicator entry's `id` and a thread slot's `tid` are
 * written once, before the count that covers the entry (entries) or before
 * anything else in the slot (threads: a slot is in use once `tid` is not 0).
 * The other fields of an entry or a slot are guarded by its own seqlock
 * (odd while a writer is inside; concurrent writers claim it with a
 * compare-and-swap), 8-byte relaxed stores, exactly as `live` is by `lock`. */
#ifndef SCOUT_RECORD_V8_H
#define SCOUT_RECORD_V8_H

#include <stdint.h>

#include "scout_record_v6.h"

#define SCOUT_RECORD_VERSION_8 8u
#define SCOUT_RECORD_V8_COMMS 32   /* communicators whose collectives are counted apart */
#define SCOUT_RECORD_V8_THREADS 16 /* threads that called MPI, each with its own waits */

#ifdef __cplusplus
extern "C" {
#endif

/* The collectives of one communicator (MPI orders them per communicator, and
 * each communicator is used by one thread at a time): how many were entered
 * and completed, and the last one entered. */
struct scout_comm_progress_v8 {
  uint64_t lock;
  uint64_t id;          /* communicator identity (as live.comm_id names it) */
  uint64_t entered;     /* collectives entered on it: the last one's ordinal */
  uint64_t completed;   /* ... returned (blocking) or waited for (nonblocking) */
  uint64_t fingerprint; /* of the last one entered */
  uint64_t kind;        /* its kind | 0x100 when nonblocking */
  uint64_t entry_ns;    /* CLOCK_MONOTONIC when it was entered */
  uint64_t exit_ns;     /* ... when the last one completed */
} __attribute__((aligned(8)));

/* One thread that called MPI: the collective it is inside, and the
 * point-to-point or completion call it waits in (as the rank-wide `p2p`
 * part says it for whichever thread wrote last). */
struct scout_thread_v8 {
  uint64_t lock;
  uint64_t tid;          /* its Linux thread id; 0 while the slot is free */
  uint64_t coll_kind;    /* the collective it is inside (kind | 0x100), 0 when none */
  uint64_t coll_comm;    /* its communicator's identity */
  uint64_t coll_ordinal; /* its ordinal on that communicator */
  uint64_t coll_entry_ns;
  struct scout_p2p_live_v6 p2p; /* `ops` counts this thread's messages */
} __attribute__((aligned(8)));

struct scout_record_v8 {
  struct scout_record_v6 v6;
  uint64_t source;            /* SCOUT_SOURCE_MPI (scout_record_v7.h's numbering): 1 */
  uint64_t threaded;          /* 1 when the program was given MPI_THREAD_MULTIPLE */
  uint64_t comm_progress_count; /* comm_progress[0, count) are in use */
  uint64_t threads_full;      /* threads that called MPI after every slot was taken */
  uint64_t comms_full;        /* collectives on communicators the full table could not take */
  struct scout_comm_progress_v8 comm_progress[SCOUT_RECORD_V8_COMMS];
  struct scout_thread_v8 threads[SCOUT_RECORD_V8_THREADS];
};

#ifdef __cplusplus
}
#endif

#endif /* SCOUT_RECORD_V8_H */
