#!/usr/bin/env bash
# Every option a program's --help lists is named in its man page (an option
# is not done until its man page says what it does).
set -euo pipefail
: "${top_builddir:?}" "${top_srcdir:?}"
B=$top_builddir
fail=0
check() {  # program man-page
  local prog=$1 page=$2 opts
  opts=$("$prog" --help 2>&1 | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u)
  [ -n "$opts" ] || { echo "FAIL: $prog --help lists no options"; fail=1; return; }
  for o in $opts; do
    # groff writes a hyphen in an option as \- ; accept both spellings.
    esc=${o//-/\\\\-}
    if ! grep -qE -- "(${o}|${esc})([^a-z0-9-]|$)" "$page"; then
      echo "FAIL: $(basename "$prog") $o is not in $(basename "$page")"
      fail=1
    fi
  done
  echo "$(basename "$prog"): $(echo "$opts" | wc -l) options, checked against $(basename "$page")"
}
# The built pages: the shared settings' entries are generated (common/settings-man).
check "$B/scoutd/scoutd" "$B/man/scoutd.8"
check "$B/cli/scoutctl" "$B/man/scoutctl.1"
check "$B/cli/scout-run" "$B/man/scout-run.1"
check "$B/spank/scout-epilog" "$B/man/scout-epilog.8"
check "$B/ledgerd/scout-ledgerd" "$B/man/scout-ledgerd.8"
exit $fail
