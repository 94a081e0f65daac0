# X_AC_FAULT_INJECTION: --enable-fault-injection compiles the test-only
# hooks (SCOUT_PROBE_TEST_*, SCOUT_REPLAY_FAULT) into the probe and scoutd.
# Off by default: an installed scout cannot be made to corrupt a job. The
# top-level Makefile enables it for the test and demo build in build/.
AC_DEFUN([X_AC_FAULT_INJECTION], [
  AC_ARG_ENABLE([fault-injection],
    [AS_HELP_STRING([--enable-fault-injection], [compile the test-only fault injection hooks (tests, demo)])],
    [], [enable_fault_injection=no])
  FAULT_CPPFLAGS=
  AS_IF([test "x$enable_fault_injection" = xyes], [FAULT_CPPFLAGS="-DSCOUT_FAULT_INJECTION=1"])
  AC_SUBST([FAULT_CPPFLAGS])
  AM_CONDITIONAL([FAULT_INJECTION], [test "x$enable_fault_injection" = xyes])
])
