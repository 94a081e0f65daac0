#!/bin/sh
# bench/fedad on Shuttle (ODDS convention: Rad.Flow normal, High dropped,
# the five small classes outliers): converts mlbench's Shuttle.rda (R's xz
# serialization) to CSV with Rscript, then runs fedad and writes the tables
# to build/bench/fedad.md (docs/fedad.md is the annotated copy of a run; a
# benchmark never overwrites it). Needs r-cran-mlbench (scripts/install-deps
# --bench).
#   FEDAD_ARGS="--seeds 2 --clients 50"  to run a smaller grid
set -eu
B=${top_builddir:?}
RDA=/usr/lib/R/site-library/mlbench/data/Shuttle.rda
if [ ! -r "$RDA" ] || ! command -v Rscript >/dev/null; then
  echo "fedad: $RDA or Rscript missing: run scripts/install-deps --bench (r-cran-mlbench); skipped"
  exit 0
fi
CSV=$B/bench/shuttle.csv
[ -s "$CSV" ] || Rscript -e "load('$RDA'); write.csv(Shuttle, file='$CSV', row.names=FALSE)"
# shellcheck disable=SC2086
"$B/bench/fedad" --csv "$CSV" --label-column Class --normal Rad.Flow --drop High ${FEDAD_ARGS:-} --out "$B/bench/fedad.md"
