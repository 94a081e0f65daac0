#!/bin/sh
# bench/fedad on three public labelled data sets from Debian's r-cran-mlbench
# (R's xz-serialised .rda files, converted to CSV with Rscript here):
#   shuttle    Statlog Shuttle, ODDS convention: Rad.Flow normal, High
#              dropped, the five small classes outliers; synthetic splits;
#   satellite  Statlog Landsat Satellite, ODDS convention: the three
#              smallest classes (cotton crop, damp grey soil, vegetation
#              stubble) outliers; synthetic splits;
#   vowel      Deterding vowels, natural split: one client per speaker
#              (column V1, 15 speakers), the vowel 'hid' as the outliers.
# Writes build/bench/fedad-NAME.md per data set (docs/fedad.md is the
# annotated copy of a run; a benchmark never overwrites it). Needs
# r-cran-mlbench (scripts/install-deps --bench).
#   FEDAD_SETS="vowel satellite"    a subset
#   FEDAD_ARGS="--seeds 1"          extra arguments for every run
set -eu
B=${top_builddir:?}
D=/usr/lib/R/site-library/mlbench/data
if [ ! -r "$D/Shuttle.rda" ] || ! command -v Rscript >/dev/null; then
  echo "fedad: $D/Shuttle.rda or Rscript missing: run scripts/install-deps --bench (r-cran-mlbench); skipped"
  exit 0
fi
csv() {  # csv NAME -> $B/bench/NAME.csv from mlbench's data set NAME
  out=$B/bench/$(echo "$1" | tr 'A-Z' 'a-z').csv
  [ -s "$out" ] || Rscript -e "load('$D/$1.rda'); write.csv($1, file='$out', row.names=FALSE)" >/dev/null
  echo "$out"
}
for set in ${FEDAD_SETS:-vowel satellite shuttle}; do
  echo "== fedad: $set"
  case $set in
    shuttle)
      # shellcheck disable=SC2086
      "$B/bench/fedad" --csv "$(csv Shuttle)" --label-column Class --normal Rad.Flow --drop High \
        ${FEDAD_ARGS:-} --out "$B/bench/fedad-shuttle.md" ;;
    satellite)
      # shellcheck disable=SC2086
      "$B/bench/fedad" --csv "$(csv Satellite)" --label-column classes \
        --outlier "cotton crop" "damp grey soil" "vegetation stubble" --seeds 5 ${FEDAD_ARGS:-} \
        --out "$B/bench/fedad-satellite.md" ;;
    vowel)
      # shellcheck disable=SC2086
      "$B/bench/fedad" --csv "$(csv Vowel)" --label-column Class --outlier hid --client-column V1 --no-synthetic \
        --local-epochs 5 --seeds 5 ${FEDAD_ARGS:-} --out "$B/bench/fedad-vowel.md" ;;
    *) echo "fedad: unknown data set '$set'; expected shuttle, satellite or vowel" >&2; exit 2 ;;
  esac
done
