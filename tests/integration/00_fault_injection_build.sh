#!/usr/bin/env bash
# The test-only hooks exist only in a build configured with
# --enable-fault-injection: a default build (CI's sanitizer build, a site's
# ./configure && make install) cannot be made to corrupt or slow a job
# through SCOUT_PROBE_TEST_* or SCOUT_REPLAY_FAULT.
set -euo pipefail
: "${top_builddir:?}"
B=$top_builddir
probe=$B/probe/.libs/libscout_probe.so
# scoutd, or in the sanitizer build (which links no scoutd) its one object
# that reads SCOUT_REPLAY_FAULT.
scoutd=$B/scoutd/round/scoutd-replay_part.o
[ -f "$scoutd" ] || scoutd=$B/scoutd/scoutd
[ -f "$probe" ] && [ -f "$scoutd" ] || { echo "build the probe and scoutd (or scoutd/round/scoutd-replay_part.o) first"; exit 1; }
if grep -q '^FAULT_CPPFLAGS = -DSCOUT_FAULT_INJECTION' "$B/Makefile"; then expect=present; else expect=absent; fi
fail=0
for pair in "$probe:SCOUT_PROBE_TEST_DELAY" "$probe:SCOUT_PROBE_TEST_CORRUPT" "$probe:SCOUT_PROBE_TEST_P2P_DELAY" \
  "$scoutd:SCOUT_REPLAY_FAULT"; do
  file=${pair%%:*} var=${pair##*:}
  # The getenv literal: the name followed by its NUL ("strings" may glue a
  # literal to neighbouring bytes; an error message naming it does not count).
  if LC_ALL=C grep -a -P -q "${var}\x00" "$file"; then got=present; else got=absent; fi
  echo "$(basename "$file"): $var $got (expected $expect)"
  [ "$got" = "$expect" ] || fail=1
done
exit $fail
