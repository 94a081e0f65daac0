#!/bin/sh
# A short run of every libFuzzer target (the long runs are `make fuzz`):
# builds them with clang into $top_builddir/fuzz-smoke and runs each for a
# few seconds from its seed corpus. Any finding fails the test.
set -eu
: "${top_builddir:?}" "${top_srcdir:?}"
command -v clang++ >/dev/null || { echo "SKIP: clang++ not installed (scripts/install-deps installs it)"; exit 77; }
out=$(cd "$top_builddir" && pwd)/fuzz-smoke
make -s -f "$top_srcdir/fuzz/Makefile" OUT="$out" OPT=-O0 -j2 >/dev/null
make -s -f "$top_srcdir/fuzz/Makefile" OUT="$out" OPT=-O0 run SECONDS="${SCOUT_FUZZ_SMOKE_SECONDS:-5}"
echo "PASS: every fuzz target ran without a finding"
