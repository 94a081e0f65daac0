/* The per-rank shared-memory record, version 6: version 5 unchanged at the
 * front (its `version` field says 6 and its `size` field the size of this
 * struct), then the point-to-point part, the event that ended the rank, and
 * bounded per-peer counters. Readers accept version 5 (no point-to-point
 * part) and version 6. Never change a struct in this file once released.
 *
 * Concurrency: `p2p` is guarded by the seqlock `p2p_lock`, exactly as `live`
 * is by `lock`; `end` is written once, `end.tag` last; a peer slot's `peer`
 * is written once (world rank + 1) before its counters, which only grow. */
#ifndef SCOUT_RECORD_V6_H
#define SCOUT_RECORD_V6_H

#include <stdint.h>

#include "scout_record_v5.h"

#define SCOUT_RECORD_VERSION_6 6u
#define SCOUT_RECORD_V6_PEERS 64   /* per-peer counter slots (world ranks) */
#define SCOUT_RECORD_V6_BLOCKED 8  /* peers listed for one blocking call */
#define SCOUT_PEER_ANY (-1)        /* a receive from any source of its communicator */

/* Point-to-point and completion calls (p2p.call). */
enum scout_p2p_call_v6 {
  SCOUT_P2P_NONE = 0,
  SCOUT_P2P_SEND, SCOUT_P2P_SSEND, SCOUT_P2P_BSEND, SCOUT_P2P_RSEND, SCOUT_P2P_RECV,
  SCOUT_P2P_SENDRECV, SCOUT_P2P_SENDRECV_REPLACE, SCOUT_P2P_PROBE, SCOUT_P2P_MPROBE,
  SCOUT_P2P_MRECV, SCOUT_P2P_WAIT, SCOUT_P2P_WAITALL, SCOUT_P2P_WAITANY, SCOUT_P2P_WAITSOME,
  SCOUT_P2P_TEST, SCOUT_P2P_TESTALL, SCOUT_P2P_TESTANY, SCOUT_P2P_TESTSOME, SCOUT_P2P_IPROBE,
  /* Appended for the NCCL probe (record version 7): its GPU is inside an
     ncclSend or ncclRecv (written by the probe's completion thread). */
  SCOUT_P2P_NCCL_SEND, SCOUT_P2P_NCCL_RECV,
  SCOUT_P2P_CALL_COUNT
};

/* The point-to-point live part, copied under p2p_lock: all 8-byte fields. */
struct scout_p2p_live_v6 {
  uint64_t ops;        /* messages completed so far (sends and receives): progress */
  uint64_t call;       /* the call the rank waits in (scout_p2p_call_v6), 0 when none */
  uint64_t entry_ns;   /* CLOCK_MONOTONIC when it began waiting there (a Test/Iprobe
                          loop: its first unsuccessful call) */
  uint64_t comm_id;    /* communicator identity of the awaited operation (0: several) */
  int64_t tag;         /* its tag (-1: any or several) */
  uint64_t npeers;     /* peers[0, npeers) are valid */
  int64_t peers[SCOUT_RECORD_V6_BLOCKED]; /* world ranks waited for, or SCOUT_PEER_ANY */
  uint64_t more_peers; /* 1 when it waits for more peers than listed */
  uint64_t any_comm;   /* communicator of an any-source receive (identity) */
} __attribute__((aligned(8)));

/* The event that ended the rank: MPI_Abort, a fatal signal, or an MPI call
   that failed under MPI_ERRORS_ARE_FATAL (MPI itself then ends the job): an
   abort whose addr carries SCOUT_END_MPI_ERROR, so that a reader that knows
   no such event still reads an abort (its code the error class); or an exit
   (exit() or a return from main) after MPI_Init and before MPI_Finalize. */
#define SCOUT_END_ABORT 1u
#define SCOUT_END_SIGNAL 2u
#define SCOUT_END_EXIT 3u /* code: the exit status, 0-255 */
#define SCOUT_END_MPI_ERROR (1ull << 63)
struct scout_end_v6 {
  uint64_t tag;     /* 0 until the fields below are complete, then kind */
  uint64_t kind;    /* SCOUT_END_ABORT, SCOUT_END_SIGNAL or SCOUT_END_EXIT */
  int64_t code;     /* the abort's error code, the signal number, the MPI error class, or the exit status */
  uint64_t addr;    /* faulting address (SIGSEGV, SIGBUS, SIGFPE, SIGILL); an abort:
                       0, or SCOUT_END_MPI_ERROR | (1 + the class's index in libc3's
                       kMpiErrorClassNames, 0 for a class of the library's own) */
  uint64_t ns;      /* CLOCK_MONOTONIC */
  uint64_t comm_id; /* MPI_Abort's communicator, or the failing call's (identity) */
  uint64_t seq;     /* collective position then */
  uint64_t p2p_call;
} __attribute__((aligned(8)));

/* Counters of one peer (world rank), in slot hash(rank) with linear probing. */
struct scout_peer_v6 {
  uint64_t peer;       /* world rank + 1; 0 while free */
  uint64_t sent, sent_bytes, recvd, recvd_bytes;
  uint64_t wait_ns;    /* time blocked waiting for messages from this peer */
  uint64_t waits;      /* messages whose wait was timed (wait_ns sums those) */
  uint64_t send_wait_ns; /* time blocked in blocking sends to this peer (a late receiver);
                           was reserved: 0 from probes before it was counted */
} __attribute__((aligned(8)));

struct scout_record_v6 {
  struct scout_record_v5 v5;
  uint64_t p2p_lock __attribute__((aligned(64)));
  struct scout_p2p_live_v6 p2p;
  struct scout_end_v6 end;
  uint64_t peers_full; /* messages not counted because every peer slot was taken */
  struct scout_peer_v6 peers[SCOUT_RECORD_V6_PEERS];
};

#endif /* SCOUT_RECORD_V6_H */
