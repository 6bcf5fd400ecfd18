#!/usr/bin/env bash
# demandtex's Ptex reader and filters against the reference library (wdas/ptex) on files the
# reference's own writer made: for each seed, `ptex-random-files` (bench/ptex-replay/
# random-files.cpp) writes random .ptx files (quads with rotated and wrapped adjacency,
# triangles, every data type, 1-4 channels, alpha, border and edge-filter modes, mip maps or
# not, tiled and constant faces, incremental and applied edits, meta data) and a `.dtxp` trace
# over them; both replayers run it with point, bilinear and box filters, and every query's
# RGBA must agree within TOLERANCE. Exits non-zero on the first disagreement or failure.
#
#   PTEX_ROOT=/path/to/ptex/install scripts/crosscheck-ptex.sh
#   PTEX_ROOT=... SEEDS="$(seq 1 50)" FILES=16 QUERIES=200000 scripts/crosscheck-ptex.sh
#
# Environment:
#   PTEX_ROOT  required: an install of the reference Ptex library, built by hand outside the
#              repository (scripts/build-ptex-replay.sh says how)
#   SEEDS      seeds (default 1 to 12)
#   FILES      files per seed (default 12)
#   QUERIES    queries per seed (default 100000)
#   FILTERS    filters (default "point bilinear box")
#   TOLERANCE  largest absolute difference allowed per channel (default 1e-5, the issue's
#              bound for filters; point lookups are exact in practice)
#   OUT        where the files and results go (default target/ptex-crosscheck)
set -euo pipefail
cd "$(dirname "$0")/.."

SEEDS=${SEEDS:-$(seq 1 12)}
FILES=${FILES:-12}
QUERIES=${QUERIES:-100000}
FILTERS=${FILTERS:-"point bilinear box"}
TOLERANCE=${TOLERANCE:-1e-5}
OUT=${OUT:-target/ptex-crosscheck}
DTX=target/release/demandtex
REF=target/ptex-replay/ptex-replay
GEN=target/ptex-replay/ptex-random-files

if [[ -z ${PTEX_ROOT:-} ]]; then
  echo "crosscheck-ptex: set PTEX_ROOT to an install of the reference Ptex library" \
       "(scripts/build-ptex-replay.sh says how to build one)" >&2
  exit 1
fi
export PTEX_ROOT
scripts/build-ptex-replay.sh
cargo build --release -q -p demandtex-cli

failed=0
for seed in $SEEDS; do
  dir=$OUT/s$seed
  rm -rf "$dir"
  mkdir -p "$dir"
  "$GEN" "$dir" "$seed" "$FILES" "$QUERIES" >"$dir/files.txt"
  trace=$dir/r$seed.dtxp
  line="seed $seed:"
  for f in $FILTERS; do
    "$REF" "$trace" --textures "$dir" --threads 1 --filter "$f" --out "$dir/ref-$f.f32" \
      --json >"$dir/ref-$f.json"
    "$DTX" bench replay "$trace" --textures "$dir" --threads 1 --filter "$f" \
      --out "$dir/dtx-$f.f32" --json >"$dir/dtx-$f.json"
    report=$("$DTX" bench compare --json --tolerance "$TOLERANCE" "$dir/dtx-$f.f32" "$dir/ref-$f.f32")
    line+=" $f $report"
    if ! grep -q '"differing_queries":0[,}]' <<<"$report"; then
      failed=1
    fi
  done
  echo "$line"
  if ((failed)); then
    echo "crosscheck-ptex: seed $seed disagrees with the reference (files and results in $dir;" \
         "the files are listed in $dir/files.txt)" >&2
    exit 1
  fi
done
echo "crosscheck-ptex: every query of every seed agrees within $TOLERANCE"
