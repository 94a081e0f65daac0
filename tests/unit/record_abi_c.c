/* The record ABI header compiled as C: the sizes and offsets a C probe sees,
 * compared with the C++ view in test_rank_record.cpp. */
#include <stddef.h>

#include "libc3/abi/scout_record_v6.h"
#include "libc3/abi/scout_record_v8.h"
#include "libc3/abi/scout_record_v9.h"
#include "libc3/abi/scout_record_v10.h"

size_t scout_test_record_v5_c_size(void) { return sizeof(struct scout_record_v5); }
size_t scout_test_record_v5_c_offset_live(void) { return offsetof(struct scout_record_v5, live); }
size_t scout_test_record_v5_c_offset_outsigs(void) { return offsetof(struct scout_record_v5, outsigs); }
size_t scout_test_record_v5_c_offset_comms(void) { return offsetof(struct scout_record_v5, comms); }
size_t scout_test_record_v6_c_size(void) { return sizeof(struct scout_record_v6); }
size_t scout_test_record_v6_c_offset_p2p(void) { return offsetof(struct scout_record_v6, p2p); }
size_t scout_test_record_v6_c_offset_peers(void) { return offsetof(struct scout_record_v6, peers); }
size_t scout_test_record_v8_c_size(void) { return sizeof(struct scout_record_v8); }
size_t scout_test_record_v8_c_offset_threads(void) { return offsetof(struct scout_record_v8, threads); }
size_t scout_test_record_v9_c_size(void) { return sizeof(struct scout_record_v9); }
size_t scout_test_record_v9_c_offset_dirs(void) { return offsetof(struct scout_record_v9, dirs); }
size_t scout_test_record_v10_c_size(void) { return sizeof(struct scout_record_v10); }
size_t scout_test_record_v10_c_offset_tags(void) { return offsetof(struct scout_record_v10, tags); }
