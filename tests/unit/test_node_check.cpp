// Root's node check reads the hardware, not the user: which kernel-log
// records count (issue 21: a process named "EDAC" that segfaults must not
// fail a node), and D state never fails a node by itself.
#include <doctest/doctest.h>

#include "spank/node_check.hpp"

using scout::spank::hardware_kernel_record;

TEST_CASE("kernel log: hardware records of the kernel count; text a process chooses never does") {
  CHECK(hardware_kernel_record("3,812,1234567,-;mce: [Hardware Error]: Machine check events logged"));
  CHECK(hardware_kernel_record("3,813,1234567,-;EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0"));
  CHECK(hardware_kernel_record("4,814,1234567,-;EDAC MC1: 3 CE memory scrubbing error on DIMM_A1"));
  CHECK(hardware_kernel_record("4,815,1234567,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."));
  // A user's process named like an anchor, segfaulting: its name leads the line.
  CHECK_FALSE(hardware_kernel_record("6,900,1234567,-;EDAC[4242]: segfault at 0 ip 0000 sp 0000 error 4 in a.out"));
  CHECK_FALSE(hardware_kernel_record("6,901,1234567,-;mce:[4242]: segfault at 0 ip 0000 sp 0000 error 4"));
  CHECK_FALSE(hardware_kernel_record("6,902,1234567,-;NVRM: Xid[4242]: segfault at 0 ip 0000 sp 0000 error 4"));
  CHECK_FALSE(hardware_kernel_record("6,903,1234567,-;EDAC MC0: 1 U[42]: segfault at 0"));  // 15-char name
  CHECK_FALSE(hardware_kernel_record("6,904,1234567,-;traps: EDAC MC0: 1 U[42] general protection fault"));
  // A record a user wrote to /dev/kmsg (facility user, 1 << 3 = 8).
  CHECK_FALSE(hardware_kernel_record("12,905,1234567,-;mce: [Hardware Error]: Machine check events logged"));
  // Hung tasks name a process the user may own: not hardware.
  CHECK_FALSE(hardware_kernel_record("3,906,1234567,-;INFO: task mpi_train:4242 blocked for more than 120 seconds."));
  CHECK_FALSE(hardware_kernel_record("garbage"));
}

TEST_CASE("node check: only results of 'fail' fail the node; D state corroborates") {
  scout::spank::NodeCheck c;
  c.checks.push_back({"replay", "pass", ""});
  c.checks.push_back({"d_state", "corroborates", "pid 1 (x in wait_for_vfork_done)"});
  CHECK_FALSE(c.failed());
  c.checks.push_back({"kernel_log", "fail", "mce"});
  CHECK(c.failed());
}
