#!/usr/bin/env bash
# Texture-count scaling: the same incoherent workload (random texture, place and footprint)
# over N textures, replayed by demandtex (blocking) and OpenImageIO's TextureSystem (its
# max_open_files at the default) with scripts/compare-oiio.sh, for each N in COUNTS, with
# one cache size for every N that holds every texture (CACHE_MB), so what grows with N is
# the cost of many textures — opening files, finding them — not cache misses. Prints
# one row per N: lookups/s of each, bytes read, the cost per KiB read (wall ns per KiB of
# texels read: the work a lookup costs beyond its reads — opening files, finding
# textures — shows as growth), and that cost against the smallest N's.
#
#   scripts/scale-textures.sh                         # 18 559 2000 10000 textures
#   COUNTS="18 559" RUNS=1 scripts/scale-textures.sh
#
# Environment: COUNTS (default "18 559 2000 10000"), SIZE (side of the larger textures,
# default 256; half are SIZE/2), QUERIES (default 4000000), CACHE_MB (default 8192),
# RUNS (default 3), THREADS
# (default 2), OUT (default target/scale-textures). Textures are written with maketx's
# 64x64 tiles. Needs what compare-oiio.sh needs.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNTS=${COUNTS:-"18 559 2000 10000"}
SIZE=${SIZE:-256}
QUERIES=${QUERIES:-4000000}
RUNS=${RUNS:-3}
THREADS=${THREADS:-2}
OUT=${OUT:-target/scale-textures}
CACHE_MB=${CACHE_MB:-8192}
mkdir -p "$OUT"

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

rows=()
for n in $COUNTS; do
  dir=$OUT/n$n
  echo "== $n textures ($dir)" >&2
  DIR=$dir TEXTURES=$n SIZE=$SIZE QUERIES=$QUERIES TILE=64 RUNS=$RUNS THREADS=$THREADS \
    MULTIPASS=0 CELLS="incoherent:fits" FITS_MB=$CACHE_MB OUT=$OUT/result-n$n \
    scripts/compare-oiio.sh >"$OUT/n$n.log" 2>&1 || {
    echo "scale-textures: compare-oiio failed for $n textures (see $OUT/n$n.log)" >&2
    exit 1
  }
  col() { while read -r l; do json_get "$1" "$l"; done <"$2" | median; }
  d=$OUT/result-n$n/incoherent-fits-demandtex.jsonl
  o=$OUT/result-n$n/incoherent-fits-oiio.jsonl
  rows+=("$n|$(col lookups_per_s "$d")|$(col lookups_per_s "$o")|$(col bytes_read "$d")|$(col bytes_read "$o")|$(col seconds "$d")|$(col seconds "$o")")
done

echo
echo "Texture-count scaling, incoherent, cache $CACHE_MB MiB, $THREADS threads," \
  "median of $RUNS runs, textures ${SIZE}² and $((SIZE / 2))² (64x64 tiles), $QUERIES lookups:"
printf '%s\n' "${rows[@]}" | awk -F'|' '
  BEGIN {
    printf "%8s | %8s %8s %6s | %10s %11s | %9s %9s | %8s %8s\n", "textures", "dtx M/s",
      "oiio M/s", "ratio", "dtx MiB rd", "oiio MiB rd", "dtx ns/KiB", "oiio ns/KiB", "dtx vs1", "oiio vs1"
  }
  {
    dn = $6 * 1e9 / ($4 / 1024); on = $7 * 1e9 / ($5 / 1024)
    if (NR == 1) { d1 = dn; o1 = on }
    printf "%8d | %8.2f %8.2f %6.2f | %10.1f %11.1f | %9.0f %9.0f | %8.2f %8.2f\n", $1,
      $2 / 1e6, $3 / 1e6, $2 / $3, $4 / 1048576, $5 / 1048576, dn, on, dn / d1, on / o1
  }'
echo "(ns/KiB: wall time per KiB of texels read; vs1: that cost against the first row's)"
