/* The per-rank shared-memory record, version 7: version 6 unchanged at the
 * front (its `version` field says 7 and its `size` the size of this struct),
 * then what a GPU probe (libscout_nccl.so) adds: which library wrote the
 * record, the rank's GPU, and how far the GPU has got through the operations
 * the host issued. Readers accept versions 5, 6 and 7. Never change a struct
 * in this file once released.
 *
 * Concurrency: the device fields are written once before the record is
 * published; `gpu` is guarded by the seqlock `gpu_lock` and written only by
 * the probe's completion thread (the host thread owns `live` and `p2p`). */
#ifndef SCOUT_RECORD_V7_H
#define SCOUT_RECORD_V7_H

#include <stdint.h>

#include "scout_record_v6.h"

#define SCOUT_RECORD_VERSION_7 7u
#define SCOUT_SOURCE_MPI 1u  /* libscout_probe.so: MPI calls */
#define SCOUT_SOURCE_NCCL 2u /* libscout_nccl.so: NCCL calls on CUDA streams */

/* GPU completion, copied under gpu_lock: all 8-byte fields. Operations are
 * numbered as live.seq numbers them (the host's issue order). */
struct scout_gpu_live_v7 {
  uint64_t tracking;   /* 1 once completion is tracked (the driver answered) */
  uint64_t started;    /* operations the GPU has begun (their start event completed) */
  uint64_t done;       /* operations the GPU has completed */
  uint64_t done_ns;    /* CLOCK_MONOTONIC when `done` last advanced */
  uint64_t poll_ns;    /* CLOCK_MONOTONIC of the completion thread's last poll */
  uint64_t captured;   /* operations captured into a CUDA graph (not tracked) */
  uint64_t untracked;  /* operations issued without events (pool full, driver error) */
  uint64_t gpu_inside_ns;  /* cumulative GPU time inside tracked operations */
  uint64_t gpu_outside_ns; /* cumulative GPU time between them */
  uint64_t error;      /* last CUresult of an event query that failed (0 none) */
} __attribute__((aligned(8)));

/* Progress per communicator (operations are numbered per communicator as
 * well): `id` is written once before `comm_ops_count` covers the slot;
 * `issued` by the host, `begun` and `done` by the completion thread, each
 * an 8-byte store that only grows (a reader may see them a poll apart). */
#define SCOUT_RECORD_V7_COMM_OPS 16
struct scout_comm_ops_v7 {
  uint64_t id;
  uint64_t issued;  /* operations the host issued on it */
  uint64_t begun;   /* ... the GPU began */
  uint64_t done;    /* ... the GPU completed */
} __attribute__((aligned(8)));

struct scout_record_v7 {
  struct scout_record_v6 v6;
  /* Header part: written once before the record is published. */
  uint64_t source;     /* SCOUT_SOURCE_* */
  int32_t cuda_device; /* the CUDA ordinal the probe saw (-1 unknown) */
  int32_t reserved7;
  char gpu_bus_id[32]; /* PCI bus id "0000:17:00.0" ("" unknown) */
  uint64_t gpu_lock __attribute__((aligned(64)));
  struct scout_gpu_live_v7 gpu;
  uint64_t comm_ops_count; /* comm_ops[0, count) are in use */
  struct scout_comm_ops_v7 comm_ops[SCOUT_RECORD_V7_COMM_OPS];
};

#endif /* SCOUT_RECORD_V7_H */
