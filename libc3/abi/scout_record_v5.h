/* The per-rank shared-memory record, version 5: the ABI between the probe
 * (inside a training rank, the only writer) and scoutd (the reader). Plain C
 * and <stdint.h> only, so any probe (C, C++, an NCCL interposer) can write it.
 * A new layout is a new file (scout_record_v6.h); readers keep accepting the
 * versions they know and refuse the others with a message naming the version
 * they expected. Never change a struct in this file once released.
 *
 * Name: POSIX shm "/scout.<job>.<step>.<rank>", mode 0600 (built in one
 * place: c3::record_shm_name). Concurrency: the header is written once before
 * the record is published; `live` is guarded by the seqlock `lock` (odd while
 * the writer is inside an update; fields stored with relaxed atomic stores,
 * 8 bytes each); ring, comm and outsig slots are validated by their tags. */
#ifndef SCOUT_RECORD_V5_H
#define SCOUT_RECORD_V5_H

#include <stdint.h>

#define SCOUT_RECORD_MAGIC 0x3142525054554F53ULL /* "SOUTPRB1" little-endian */
#define SCOUT_RECORD_VERSION_5 5u
#define SCOUT_RECORD_V5_RING 64      /* recent collectives kept per rank */
#define SCOUT_RECORD_V5_COMMS 16     /* communicators published */
#define SCOUT_RECORD_V5_MEMBERS 64   /* members stored per communicator */
#define SCOUT_RECORD_V5_OUTSIGS 256  /* signed collective outputs kept */

#ifdef __cplusplus
extern "C" {
#endif

/* The live part, copied under the seqlock: all 8-byte fields. */
struct scout_record_live_v5 {
  uint64_t seq;           /* collectives entered so far (monotonic) */
  uint64_t fingerprint;   /* of the current / last collective */
  uint64_t comm_id;       /* identity of its communicator */
  uint64_t kind;          /* collective kind | 0x100 when nonblocking */
  int64_t count;
  uint64_t datatype;      /* stable datatype code */
  uint64_t op;            /* stable reduction op code */
  int64_t root;
  uint64_t in_collective; /* 1 while inside a collective (or its wait) */
  uint64_t entry_ns;      /* CLOCK_MONOTONIC of the last entry */
  uint64_t exit_ns;       /* CLOCK_MONOTONIC of the last exit */
  uint64_t inside_ns;     /* cumulative time inside collectives */
  uint64_t outside_ns;    /* cumulative time outside (compute) */
  uint64_t state;         /* 1 initialised, 2 finalised */
  uint64_t out_sig;       /* signature of a sampled collective output */
  uint64_t out_sig_seq;   /* seq of the collective out_sig belongs to */
} __attribute__((aligned(8)));

/* One recent collective, in slot seq % RING; tag == seq once complete. */
struct scout_ring_slot_v5 {
  uint64_t tag;
  uint64_t fingerprint;
  uint64_t entry_ns;
  uint64_t exit_ns; /* 0 while still inside */
} __attribute__((aligned(8)));

/* A communicator: identity and its first MEMBERS world ranks. */
struct scout_comm_entry_v5 {
  uint64_t id;
  uint32_t size;
  uint32_t stored; /* members[] holds min(size, MEMBERS) */
  int32_t members[SCOUT_RECORD_V5_MEMBERS];
};

/* A signed collective output, in slot index % OUTSIGS; tag == index + 1. */
struct scout_outsig_v5 {
  uint64_t tag;
  uint64_t comm; /* communicator identity */
  uint64_t call; /* ordinal of the signable collective on that communicator */
  uint64_t kind; /* collective kind */
  uint64_t sig;  /* libc3 signature of the output buffer */
  uint64_t bytes;
} __attribute__((aligned(8)));

struct scout_record_v5 {
  /* Header: written once before the record is published, then read-only. */
  uint64_t magic;      /* SCOUT_RECORD_MAGIC */
  uint32_t version;    /* SCOUT_RECORD_VERSION_5 */
  uint32_t size;       /* sizeof(struct scout_record_v5) of the writer */
  int32_t world_rank;
  int32_t world_size;
  int32_t pid;
  int32_t reserved0;
  uint64_t start_ns;   /* CLOCK_MONOTONIC at MPI_Init */
  char job_id[32];
  char step_id[16];
  char host[64];
  /* Seqlock: odd while the writer is inside an update. */
  uint64_t lock __attribute__((aligned(64)));
  struct scout_record_live_v5 live;
  struct scout_ring_slot_v5 ring[SCOUT_RECORD_V5_RING];
  uint64_t ring_kind[SCOUT_RECORD_V5_RING]; /* collective kind per slot */
  uint64_t ring_comm[SCOUT_RECORD_V5_RING]; /* communicator identity per slot */
  uint64_t comm_count;                      /* comms[0, comm_count) are complete */
  struct scout_comm_entry_v5 comms[SCOUT_RECORD_V5_COMMS];
  uint64_t outsig_count; /* written so far; the last OUTSIGS kept */
  struct scout_outsig_v5 outsigs[SCOUT_RECORD_V5_OUTSIGS];
};

#ifdef __cplusplus
}
#endif

#endif /* SCOUT_RECORD_V5_H */
